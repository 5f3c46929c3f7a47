"""``epsstar demo``: train DP and non-DP models on UCI Adult and audit each one.

The demo reproduces, on a small scale, the Adult experiment of §4.1 of *Epsilon*:
Privacy Metric for Machine Learning Models* (Negoescu et al., 2024): non-private
baselines trained for 1, 5, 10 and 20 epochs and DP-SGD models trained to
ε ∈ {1, 3, 10} (δ = 1/(n ln n)), all with the reference trainer (SGD, lr 0.01,
momentum 0.9). ``--quick`` sets a network over-fitted on a small subsample beside
one trained with DP-SGD, for a first look. ``docs/demo.md`` explains the settings.

It is the three commands a user would run, chained: the grid is a sweep
(:mod:`epsstar.training.runs.sweep`, its runs trained in ``--jobs`` worker processes,
whose epochs reach the progress bars in this process);
every exported ONNX model is then audited from the outside with
:func:`epsstar.audit.many.audit_many`, like any third-party model, with an HTML
report each; and the privacy–utility landscape is drawn from the results. The
results are written to ``results.json`` (atomically) in the layout of
``epsstar audit-many --json``.
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from epsstar.cli.commands.train import add_threads_argument
from epsstar.cli.common.text_table import aligned_table
from epsstar.cli.exit_codes import EXIT_OK, EXIT_PARTIAL

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import TaskID

    from epsstar.audit.many import ManifestEntry, ModelAudit, ReportWriter, StrategySummary
    from epsstar.training.data.datasets import AdultData
    from epsstar.training.results import EpochStats
    from epsstar.training.runs.sweep import GridStrategy, SweepConfig
    from epsstar.training.trainer import TrainingConfig

SUMMARY = (
    "train non-private and DP-SGD models on the UCI Adult data and audit each one "
    "(35 models; --quick: 2; measured timings in docs/performance.md)"
)

#: The reference model: an MLP with three hidden layers of 100 units.
HIDDEN: tuple[int, ...] = (100, 100, 100)
BATCH_SIZE = 64
#: SGD's learning rate (the paper's; momentum 0.9, the trainer's default, also is).
LR = 0.01
CLIP = 1.0
BASELINE_EPOCHS: tuple[int, ...] = (1, 5, 10, 20)
DP_EPSILONS: tuple[float, ...] = (1.0, 3.0, 10.0)
DP_EPOCHS = 5
REPEATS = 5
#: --quick: a subsample small enough for a network to memorise, and two strategies side by
#: side: one over-fitted without privacy (it leaks), one trained with DP-SGD to ε = 3.
QUICK_ROWS = (2_000, 2_000)
QUICK_BASELINE_EPOCHS: tuple[int, ...] = (50,)
QUICK_DP_EPSILONS: tuple[float, ...] = (3.0,)
QUICK_DP_EPOCHS = 10
#: At 2,000 rows a batch of 64 is a larger share of the data, so DP-SGD reaches its ε in
#: fewer steps (310) with more noise (σ ≈ 1.03): with lr 0.01 the DP model predicts the
#: majority class; 0.05 lets it learn.
QUICK_DP_LR = 0.05
LABEL = "label"


def strategies(quick: bool) -> list[GridStrategy]:
    """The demo's strategies: baselines by epochs, then DP-SGD by target ε (seed set per repeat)."""
    from epsstar.training.runs.sweep import GridStrategy
    from epsstar.training.trainer import TrainingConfig

    baseline_epochs = QUICK_BASELINE_EPOCHS if quick else BASELINE_EPOCHS
    epsilons = QUICK_DP_EPSILONS if quick else DP_EPSILONS
    dp_epochs = QUICK_DP_EPOCHS if quick else DP_EPOCHS
    dp_lr = QUICK_DP_LR if quick else LR
    chosen = [
        GridStrategy(
            f"nonprivate-e{epochs}",
            TrainingConfig(epochs=epochs, batch_size=BATCH_SIZE, hidden=HIDDEN, lr=LR),
        )
        for epochs in baseline_epochs
    ]
    chosen += [
        GridStrategy(
            f"dp-eps{epsilon:g}-e{dp_epochs}",
            TrainingConfig(
                epochs=dp_epochs,
                batch_size=BATCH_SIZE,
                hidden=HIDDEN,
                lr=dp_lr,
                clip=CLIP,
                target_epsilon=epsilon,
            ),
        )
        for epsilon in epsilons
    ]
    return chosen


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help=SUMMARY,
        description=SUMMARY + ". Writes DIR/data/ (the two splits as Parquet), DIR/models/ "
        "(model.onnx, model.pt and training.json per model, and the sweep's manifest.csv), "
        "DIR/reports/ and DIR/landscape.html (when the HTML reports are available) and "
        "DIR/results.json. Needs the torch and onnx extras. Exit code 0; 2 for bad input "
        "(nothing written); 3 when some model could not be trained or audited (the others' "
        "results are written).",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        default="epsstar-demo",
        help="output folder (default: ./epsstar-demo); a non-empty one needs --overwrite",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace the contents of a non-empty DIR"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"a first look: on {QUICK_ROWS[0]:,} training and "
        f"{QUICK_ROWS[1]:,} population rows, a network over-fitted without privacy "
        f"({QUICK_BASELINE_EPOCHS[0]} epochs) beside one trained with DP-SGD to "
        f"ε = {QUICK_DP_EPSILONS[0]:g}; one repeat, --jobs 1",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help=f"models per strategy, with seeds S, S+1, ... (default: {REPEATS}; 1 with --quick)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the first repeat and of the audits"
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="parallel worker processes (default: 2 or the number of CPUs if fewer; 1 with "
        "--quick, whose two small models train faster than worker processes start)",
    )
    add_threads_argument(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.set_defaults(handler=run)


def _check_arguments(args: argparse.Namespace) -> tuple[int, Path]:
    from epsstar.exceptions import InvalidInputError
    from epsstar.plumbing.runtime.threads import choose_threads
    from epsstar.training.runs.export import check_output_dir
    from epsstar.training.runs.sweep import MAX_MODELS

    for name in ("jobs", "repeats"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise InvalidInputError(f"--{name} must be at least 1. Found {value}.")
    if args.seed < 0:
        raise InvalidInputError(f"--seed must be an integer ≥ 0. Found {args.seed}.")
    repeats = args.repeats if args.repeats is not None else (1 if args.quick else REPEATS)
    if args.jobs is None:  # the default depends on --quick
        args.jobs = 1 if args.quick else min(2, os.cpu_count() or 1)
    if repeats * len(strategies(args.quick)) > MAX_MODELS:
        raise InvalidInputError(
            f"--repeats asks for more than {MAX_MODELS:,} models. Found {repeats}."
        )
    choose_threads(1, args.threads)  # a bad --threads or EPSSTAR_THREADS fails here
    out = check_output_dir(args.out, args.overwrite)
    return repeats, out


def _check_extras() -> None:
    from epsstar.exceptions import InputFileError

    missing = []
    for module in ("torch", "dp_accounting", "onnx", "onnxruntime"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        raise InputFileError(
            f"the demo trains and audits models and needs {', '.join(missing)}: "
            "python -m pip install 'epsstar[all]'."
        )


def reports_available() -> bool:
    """Whether :mod:`epsstar.reports` provides ``render`` and ``render_landscape``."""
    try:
        from epsstar.reports import render, render_landscape  # noqa: F401
    except Exception:
        return False
    return True


def _clear(out: Path) -> None:
    """Remove what an earlier demo wrote (``--overwrite``); other files are left alone."""
    import shutil

    for name in ("data", "models", "reports"):
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
    for name in ("results.json", "landscape.html"):
        (out / name).unlink(missing_ok=True)


def _number(value: float | None, spec: str = ".4f") -> str:
    return "-" if value is None else format(value, spec)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _auroc(record: ModelAudit) -> float | None:
    return None if record.result is None else _finite(record.result.utility["population"].auroc)


def _lower_bound(record: ModelAudit) -> float | None:
    return None if record.result is None else record.result.lower_bound.epsilon


class _Display:
    """Progress on standard error, nothing with ``quiet``.

    One :func:`~epsstar.training.progress.progress_display`: on a terminal, a bar over
    the training of all models with the time left (counted in epochs, an epoch of DP-SGD
    twice), a bar per model in training (epoch, loss, ε spent), then a bar over the audits.
    Elsewhere (a log file, a CI job) a line per trained model with the time left. A line
    per audited model in either case.
    """

    def __init__(
        self,
        configs: dict[str, TrainingConfig],
        repeats: int,
        *,
        quiet: bool,
        console: Console | None = None,
    ) -> None:
        from epsstar.training.progress import progress_display
        from epsstar.training.runs.sweep_workers import epoch_cost

        self.configs = configs
        self.total = len(configs) * repeats
        self.quiet = quiet
        self.display = progress_display(console)
        self.bars = not quiet and not self.display.disable
        self.ids: dict[tuple[str, int], TaskID] = {}
        self.epochs_done: dict[tuple[str, int], int] = {}
        self.trained_count = 0
        self.audited_count = 0
        work = sum(config.epochs * epoch_cost(config) for config in configs.values()) * repeats
        self.training = self.display.add_task(
            "training", total=work, count=self._models(0), status=""
        )
        self.audits: TaskID | None = None

    def _models(self, done: int) -> str:
        return f"{done}/{self.total} models"

    def __enter__(self) -> _Display:
        if self.bars:
            self.display.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bars:
            self.display.stop()

    def _line(self, text: str) -> None:
        if not self.quiet:
            self.display.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def plan(self, label: str) -> None:
        """The sweep starts searching the noise multiplier of a strategy."""
        config = self.configs[label]
        self.step(f"{label}: choosing the noise multiplier for ε = {config.target_epsilon:g}")

    def epoch(self, label: str, repeat: int, stats: EpochStats) -> None:
        """An epoch of a model done, in this process or in a worker process."""
        from epsstar.training.runs.sweep_workers import epoch_cost

        key = (label, repeat)
        config = self.configs[label]
        done = stats.epoch - self.epochs_done.get(key, 0)
        self.epochs_done[key] = stats.epoch
        self.display.advance(self.training, done * epoch_cost(config))
        if self.bars:
            if key not in self.ids:
                self.ids[key] = self.display.add_task(
                    f"{label} #{repeat}", total=config.epochs, unit="epochs", status=""
                )
            epsilon = "" if stats.epsilon is None else f"  ε {stats.epsilon:.2f}"
            self.display.update(
                self.ids[key], completed=stats.epoch, status=f"loss {stats.loss:.4f}{epsilon}"
            )
        if stats.epoch < stats.epochs:
            return
        self.trained_count += 1
        self.display.update(self.training, count=self._models(self.trained_count))
        if self.bars:
            self.display.remove_task(self.ids.pop(key))
            return
        from epsstar.training.progress import time_left

        left = time_left(self.display, self.training)
        after = "" if left is None or self.trained_count == self.total else f", {left} left"
        self._line(f"trained {label} #{repeat} ({self._models(self.trained_count)}{after})")

    def step(self, text: str) -> None:
        """A line saying what the demo does next."""
        self._line(f"{text} ...")

    def audits_start(self, count: int) -> None:
        self.audits = self.display.add_task("auditing", total=count, unit="models", status="")

    def audited(self, record: ModelAudit) -> None:
        self.audited_count += 1
        if record.error is not None:
            status = f"error: {record.error}"
        else:
            status = (
                f"Epsilon* {record.epsilon_star:.4f} (95 % lower bound "
                f"{_number(_lower_bound(record))}), AUROC {_number(_auroc(record))}"
            )
        entry = record.entry
        if self.audits is not None:
            self.display.advance(self.audits, 1)
        self._line(
            f"[{self.audited_count}/{self.total}] {entry.strategy} #{entry.repeat}: {status}"
        )


# --- training: one sweep of the whole grid, in worker processes ------------------------------


def _train(
    config: SweepConfig, n_records: int, args: argparse.Namespace, display: _Display
) -> dict[str, str]:
    """Train the grid as one sweep in ``jobs`` worker processes; the errors by strategy.

    A strategy that cannot be trained on the data is left out with its error, so that the
    others are trained; an error that stops the sweep is every unfinished model's. Each
    worker gets ``--threads`` torch threads, or the idle cores shared among the workers.
    """
    from epsstar.exceptions import EpsstarError
    from epsstar.plumbing.runtime.threads import apply_threads, choose_threads
    from epsstar.training.runs.sweep import SweepCompute, run_sweep, write_manifest

    assert config.out is not None  # set by _prepare
    errors: dict[str, str] = {}
    for strategy in config.strategies:
        try:
            strategy.config.validate(n_records)
        except EpsstarError as error:
            errors[strategy.label] = str(error)
    kept = tuple(s for s in config.strategies if s.label not in errors)
    apply_threads(choose_threads(1, args.threads))  # when the sweep trains in this process
    try:
        if kept:
            run_sweep(
                replace(config, strategies=kept),
                progress=False,
                on_epoch=display.epoch,
                on_plan=display.plan,
                compute=SweepCompute(threads=args.threads, workers=args.jobs),
            )
    except Exception as error:  # the models finished are kept and audited
        kind = "" if isinstance(error, EpsstarError) else f"unexpected {type(error).__name__}: "
        errors.update({s.label: f"{kind}{error}" for s in kept})
    write_manifest(config, config.out)
    return errors


# --- auditing: audit_many over the trained models --------------------------------------------


def _params(config: TrainingConfig, privacy: dict[str, Any] | None) -> dict[str, Any]:
    """A model's hyper-parameters as ``epsstar sweep``'s manifest names them (and its ε)."""
    return {
        "private": config.private,
        "epochs": config.epochs,
        "batch_size": config.batch_size,
        "hidden": list(config.hidden),
        "lr": config.lr,
        "momentum": config.momentum,
        "clip": config.clip if config.private else None,
        "target_epsilon": config.target_epsilon,
        "delta": None if privacy is None else privacy["delta"],
        "accountant": config.accountant if config.private else None,
        "seed": config.seed,
        "epsilon": None if privacy is None else privacy["epsilon"],
        "noise_multiplier": None if privacy is None else privacy["noise_multiplier"],
    }


def _models(config: SweepConfig) -> list[tuple[ManifestEntry, dict[str, Any] | None]]:
    """Every model of the grid as a manifest entry, with its ``training.json`` when trained."""
    from epsstar.audit.many import ManifestEntry
    from epsstar.plumbing.files.schema import read_json
    from epsstar.training.runs.export import MODEL_FILES

    assert config.out is not None  # set by _prepare, like the population
    assert config.population is not None
    models = []
    for strategy in config.strategies:
        for repeat in range(config.repeats):
            folder = config.out / strategy.label / str(repeat)
            record = folder / MODEL_FILES["record"]
            training: Any = read_json(record, str(record)) if record.is_file() else None
            run_config = replace(strategy.config, seed=config.seed + repeat)
            entry = ManifestEntry(
                model=folder / MODEL_FILES["onnx"],
                train=config.data,
                population=config.population,
                label_column=LABEL,
                strategy=strategy.label,
                repeat=repeat,
                params=_params(run_config, None if training is None else training["privacy"]),
            )
            models.append((entry, training))
    return models


def _audit(
    models: list[tuple[ManifestEntry, dict[str, Any] | None]],
    errors: dict[str, str],
    args: argparse.Namespace,
    reports: Path | None,
    display: _Display,
) -> list[ModelAudit]:
    """Audit the trained models (in grid order); the others fail with their training error."""
    from epsstar.audit.many import FleetSettings, ModelAudit, audit_many
    from epsstar.audit.options import AuditOptions

    trained = [entry for entry, training in models if training is not None]
    display.audits_start(len(trained))
    write_report: ReportWriter | None = None
    if reports is not None:
        from epsstar.cli.common.writers import report_writer

        write_report = report_writer
    audited = iter(
        audit_many(
            trained,
            FleetSettings(AuditOptions(seed=args.seed), command=_demo_command(args)),
            jobs=args.jobs,
            on_done=display.audited,
            report_dir=reports,
            write_report=write_report,
        )
    )
    records = []
    for entry, training in models:
        if training is not None:
            records.append(next(audited))
        else:
            reason = errors.get(entry.strategy, "training did not finish")
            records.append(ModelAudit(entry, error=f"not trained: {reason}"))
    return records


def _demo_command(args: argparse.Namespace) -> str:
    """The provenance of the demo's audits: the demo that ran them, not the Python API."""
    words = getattr(args, "command_line", None)
    return shlex.join(words) if words else "epsstar demo"


def _model_json(record: ModelAudit, training: dict[str, Any] | None) -> dict[str, Any]:
    """The audit-many record of one model, with where and how it was trained."""
    document = record.to_dict()
    if training is not None:
        document["training"] = {
            "record": str(record.entry.model.with_name("training.json")),
            "utility": training["utility"],
            "wall_time_seconds": training["wall_time_seconds"],
        }
    return document


def _landscape(models: list[dict[str, Any]], out: Path) -> tuple[str | None, str | None]:
    """Draw the landscape from the models' JSON records: its path, or why it was not drawn."""
    from epsstar.audit.output.landscape_data import landscape
    from epsstar.cli.common.writers import LANDSCAPE, write_file

    path = out / "landscape.html"
    try:
        write_file(LANDSCAPE, landscape(models, utility="auroc"), path)
        return str(path), None
    except Exception as error:  # the landscape is an extra; the results stand without it
        return None, f"{type(error).__name__}: {error}"


# --- results ---------------------------------------------------------------------------------


def _table(records: Sequence[ModelAudit], summaries: Sequence[StrategySummary]) -> str:
    import numpy as np

    def mean(values: list[float | None]) -> float | None:
        numbers = [v for v in values if v is not None]
        return float(np.mean(numbers)) if numbers else None

    header = [
        "strategy",
        "models",
        "DP eps target",
        "DP eps achieved",
        "Epsilon* mean",
        "Epsilon* min-max",
        "mechanism",
        "lower bound",
        "AUROC",
        "accuracy",
    ]
    rows = [header]
    for summary in summaries:
        members = [r for r in records if r.entry.strategy == summary.strategy]
        results = [r.result for r in members if r.result is not None]
        achieved = [r.entry.params.get("epsilon") for r in members if r.result is not None]
        spread = (
            "-"
            if summary.epsilon_min is None or summary.epsilon_max is None
            else f"{summary.epsilon_min:.4f}-{summary.epsilon_max:.4f}"
        )
        rows.append(
            [
                summary.strategy,
                f"{len(results)}/{summary.n_models}",
                _number(summary.params.get("target_epsilon"), "g"),
                _number(max((a for a in achieved if a is not None), default=None), ".3f"),
                _number(summary.epsilon_mean),
                spread,
                _number(summary.mechanism_epsilon),
                _number(mean([r.lower_bound.epsilon for r in results])),
                _number(mean([_auroc(r) for r in members if r.result is not None])),
                _number(mean([r.utility["population"].accuracy for r in results])),
            ]
        )
    return aligned_table(rows, left_columns=1)


def _delta(records: Sequence[ModelAudit]) -> str:
    for record in records:
        if record.result is not None:
            return f"{record.result.delta:.3g}"
    return "-"


def _dataset(data: AdultData, config: SweepConfig, quick: bool) -> dict[str, Any]:
    return {
        "name": "UCI Adult (Census Income)",
        "attribution": "Barry Becker and Ronny Kohavi, Adult, UCI Machine Learning "
        "Repository, 1996, https://doi.org/10.24432/C5XW20",
        "licence": "CC BY 4.0",
        "train": str(config.data),
        "population": str(config.population),
        "label_column": LABEL,
        "label": "1 = income >50K",
        "n_train": data.n_train,
        "n_population": data.n_population,
        "n_features": len(data.feature_names),
        "subsample": bool(quick),
    }


def _print_summary(
    records: Sequence[ModelAudit],
    summaries: Sequence[StrategySummary],
    data: AdultData,
    config: SweepConfig,
    out: Path,
) -> None:
    print(
        f"Epsilon* of {len(records)} models trained on UCI Adult ({data.n_train:,} training and "
        f"{data.n_population:,} population rows; {config.repeats} per strategy; "
        f"δ = 1/(n ln n) = {_delta(records)}):\n"
    )
    print(_table(records, summaries))
    print(
        "\nEpsilon* mean/min-max over the repeats; mechanism = log mean exp(Epsilon*) "
        "(Theorem 2); lower bound = mean 95 % lower bound; AUROC and accuracy on the "
        "population rows."
    )
    print("\nFiles:")
    print(f"  data       {config.data}  {config.population}")
    print(
        f"  models     {out / 'models'}{os.sep} (<strategy>/<repeat>/: model.onnx, model.pt, "
        "training.json; manifest.csv)"
    )
    print(f"  results    {out / 'results.json'}")


def _print_files(records: Sequence[ModelAudit], payload: dict[str, Any], out: Path) -> None:
    if payload["reports_available"]:
        written = sum(1 for r in records if r.report is not None)
        print(f"  reports    {out / 'reports'}{os.sep} ({written} of {len(records)} models)")
        if payload["landscape"] is not None:
            print(f"  landscape  {payload['landscape']}")
        else:
            print(f"  landscape  not written: {payload['landscape_error']}")
    else:
        print("  reports    unavailable (epsstar.reports does not provide render/render_landscape)")
    for record in records:
        if record.error is not None:
            entry = record.entry
            print(f"FAILED {entry.strategy} #{entry.repeat}: {record.error}", file=sys.stderr)


def _prepare(args: argparse.Namespace, out: Path, repeats: int) -> tuple[AdultData, SweepConfig]:
    """Write the data as Parquet; the sweep that trains the demo's grid on it."""
    from epsstar.training.data.datasets import adult
    from epsstar.training.runs.sweep import SweepConfig

    if args.overwrite and out.is_dir():
        _clear(out)
    out.mkdir(parents=True, exist_ok=True)
    data = adult()
    if args.quick:
        data = data.subsample(*QUICK_ROWS, seed=args.seed)
    train_path, population_path = data.write_parquet(out / "data")
    config = SweepConfig(
        data=Path(train_path),
        label_column=LABEL,
        population=Path(population_path),
        features=None,
        out=out / "models",
        repeats=repeats,
        seed=args.seed,
        strategies=tuple(strategies(args.quick)),
    )
    return data, config


def _payload(
    args: argparse.Namespace,
    data: AdultData,
    config: SweepConfig,
    records: Sequence[ModelAudit],
    documents: list[dict[str, Any]],
) -> dict[str, Any]:
    """``results.json`` (without ``landscape`` and ``seconds``): the layout of audit-many's."""
    from epsstar import __version__
    from epsstar.audit.many import summarise
    from epsstar.audit.output.result import SCHEMA_VERSION

    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "epsstar-demo",
        "epsstar_version": __version__,
        "dataset": _dataset(data, config, args.quick),
        "settings": {
            "quick": bool(args.quick),
            "repeats": config.repeats,
            "seed": args.seed,
            "jobs": args.jobs,
            "strategies": [s.label for s in config.strategies],
        },
        "reports_available": reports_available(),
        "landscape": None,
        "landscape_error": None,
        "n_models": len(records),
        "n_failed": sum(1 for r in records if r.failed),
        "strategies": [s.to_dict() for s in summarise(records)],
        "models": documents,
    }


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    _check_extras()  # before the arguments, whose checks import torch
    repeats, out = _check_arguments(args)
    from epsstar.audit.many import summarise
    from epsstar.cli.common.writers import JSON, write_file

    with_reports = reports_available()
    if not args.quiet:
        print("reading UCI Adult and writing it as Parquet ...", file=sys.stderr, flush=True)
    data, config = _prepare(args, out, repeats)
    seconds = {"data": time.perf_counter() - started}
    configs = {s.label: s.config for s in config.strategies}
    with _Display(configs, repeats, quiet=args.quiet) as display:
        display.step(f"training {display.total} models (σ of DP-SGD chosen once per strategy)")
        errors = _train(config, data.n_train, args, display)
        seconds["training"] = time.perf_counter() - started - sum(seconds.values())
        models = _models(config)
        display.step("auditing the models")
        records = _audit(models, errors, args, out / "reports" if with_reports else None, display)
    seconds["audit"] = time.perf_counter() - started - sum(seconds.values())
    documents = [_model_json(r, training) for r, (_, training) in zip(records, models, strict=True)]
    payload = _payload(args, data, config, records, documents)
    if with_reports:
        payload["landscape"], payload["landscape_error"] = _landscape(documents, out)
    seconds["total"] = time.perf_counter() - started
    payload["seconds"] = {key: round(value, 1) for key, value in seconds.items()}
    write_file(JSON, payload, out / "results.json")
    _print_summary(records, summarise(records), data, config, out)
    _print_files(records, payload, out)
    print(f"\nDone in {seconds['total']:.0f} s.")
    return EXIT_PARTIAL if payload["n_failed"] else EXIT_OK
