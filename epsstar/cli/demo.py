"""``epsstar demo``: train DP and non-DP models on UCI Adult and audit each one.

The demo reproduces, on a small scale, the Adult experiment of §4.1 of
``epsilon-star-negoescu-2024.md``: non-private baselines trained for 1, 5, 10
and 20 epochs and DP-SGD models trained to ε ∈ {1, 3, 10} (δ = 1/(n ln n)),
all with the reference trainer (SGD, lr 0.01, momentum 0.9). Every model is
exported to ONNX and audited from the outside with :func:`epsstar.audit.audit`,
like any third-party model. ``docs/demo.md`` explains the settings.

Models are trained and audited in parallel worker processes (``--jobs``);
they report their epochs through a queue so that the main process can draw the
progress bars. The results are written to ``results.json`` (atomically) in the
layout of ``epsstar audit-many --json``, plus an HTML report per model and the
privacy–utility landscape when :mod:`epsstar.reports` is available.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import queue
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from epsstar.cli.exit_codes import EXIT_OK, EXIT_USAGE
from epsstar.cli.text_table import aligned_table

if TYPE_CHECKING:
    from epsstar.training.trainer import PrivacyPlan, TrainingConfig

SUMMARY = (
    "train non-private and DP-SGD models on the UCI Adult data and audit each one "
    "(35 models: measured 3.5 minutes on 2 idle cores; --quick: about 20 seconds)"
)

#: The reference model: an MLP with three hidden layers of 100 units.
HIDDEN: tuple[int, ...] = (100, 100, 100)
BATCH_SIZE = 64
CLIP = 1.0
BASELINE_EPOCHS: tuple[int, ...] = (1, 5, 10, 20)
DP_EPSILONS: tuple[float, ...] = (1.0, 3.0, 10.0)
DP_EPOCHS = 5
REPEATS = 5
#: --quick: a subsample, three strategies, one repeat.
QUICK_ROWS = (3_000, 1_500)
QUICK_BASELINE_EPOCHS: tuple[int, ...] = (1, 5)
QUICK_DP_EPSILONS: tuple[float, ...] = (3.0,)
QUICK_DP_EPOCHS = 2
LABEL = "label"


@dataclass(frozen=True, slots=True)
class Strategy:
    """One way of training: a name and the trainer's settings (the seed is set per repeat)."""

    name: str
    config: TrainingConfig


def strategies(quick: bool) -> list[Strategy]:
    """The demo's strategies: baselines by epochs, then DP-SGD by target ε."""
    from epsstar.training.trainer import TrainingConfig

    baseline_epochs = QUICK_BASELINE_EPOCHS if quick else BASELINE_EPOCHS
    epsilons = QUICK_DP_EPSILONS if quick else DP_EPSILONS
    dp_epochs = QUICK_DP_EPOCHS if quick else DP_EPOCHS
    chosen = [
        Strategy(
            f"nonprivate-e{epochs}",
            TrainingConfig(epochs=epochs, batch_size=BATCH_SIZE, hidden=HIDDEN),
        )
        for epochs in baseline_epochs
    ]
    chosen += [
        Strategy(
            f"dp-eps{epsilon:g}-e{dp_epochs}",
            TrainingConfig(
                epochs=dp_epochs,
                batch_size=BATCH_SIZE,
                hidden=HIDDEN,
                clip=CLIP,
                target_epsilon=epsilon,
            ),
        )
        for epsilon in epsilons
    ]
    return chosen


@dataclass(frozen=True, slots=True)
class Task:
    """One model to train, save, audit and report on (sent to a worker process)."""

    index: int
    strategy: str
    repeat: int
    config: TrainingConfig
    plan: PrivacyPlan | None
    train: str
    population: str
    model_dir: str
    report: str | None
    audit_seed: int
    params: dict[str, Any] = field(default_factory=dict)


# --- worker side ---------------------------------------------------------------------------

_messages: Any = None


def _init_worker(messages: Any, threads: int) -> None:
    global _messages
    _messages = messages
    import torch

    torch.set_num_threads(threads)


def _send(message: tuple[Any, ...]) -> None:
    if _messages is not None:
        _messages.put(message)


def run_task(task: Task, notify: Callable[[tuple[Any, ...]], None] | None = None) -> dict[str, Any]:
    """Train, write, audit and report one model; errors become the record's ``error``."""
    tell = notify or _send
    record: dict[str, Any] = {
        "entry": {
            "model": str(Path(task.model_dir) / "model.onnx"),
            "train": task.train,
            "population": task.population,
            "label_column": LABEL,
            "strategy": task.strategy,
            "repeat": task.repeat,
            "params": dict(task.params),
        }
    }
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _train_and_audit(task, record, tell)
        record["warnings"] = [str(w.message) for w in caught]
    except Exception as error:  # one failed model must not lose the others
        from epsstar.exceptions import EpsstarError

        kind = "" if isinstance(error, EpsstarError) else f"unexpected {type(error).__name__}: "
        record["error"] = f"{kind}{error}"
    return record


def _train_and_audit(
    task: Task, record: dict[str, Any], tell: Callable[[tuple[Any, ...]], None]
) -> None:
    from epsstar.audit.run import audit
    from epsstar.training.export import prepare_output_dir, write_model_dir
    from epsstar.training.pipeline import load_inputs
    from epsstar.training.trainer import train

    tell(("start", task.index))
    data, population = load_inputs(task.train, LABEL, task.population)
    trained = train(
        data,
        task.config,
        population=population,
        plan=task.plan,
        on_epoch=lambda stats: tell(("epoch", task.index, stats.epoch, stats.loss, stats.epsilon)),
    )
    write_model_dir(prepare_output_dir(task.model_dir, True), trained.model, trained.result)
    summary = trained.result.to_dict()
    privacy = summary["privacy"]
    record["entry"]["params"].update(
        epsilon=None if privacy is None else privacy["epsilon"],
        noise_multiplier=None if privacy is None else privacy["noise_multiplier"],
    )
    record["training"] = {
        "record": str(Path(task.model_dir) / "training.json"),
        "utility": summary["utility"],
        "wall_time_seconds": summary["wall_time_seconds"],
    }
    tell(("audit", task.index))
    result = audit(
        record["entry"]["model"],
        task.train,
        task.population,
        label_column=LABEL,
        seed=task.audit_seed,
    )
    record["result"] = result.to_dict()
    if task.report is not None:
        tell(("report", task.index))
        try:
            from epsstar.reports import render

            record["report"] = str(render(result, task.report))
        except Exception as error:  # a report is an extra; the audit stands without it
            record["report_error"] = f"{type(error).__name__}: {error}"


# --- main process ----------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help=SUMMARY,
        description=SUMMARY + ". Writes DIR/data/ (the two splits as Parquet), DIR/models/ "
        "(model.onnx, model.pt and training.json per model), DIR/reports/ and "
        "DIR/landscape.html (when the HTML reports are available) and DIR/results.json. "
        "Needs the torch and onnx extras. Exit code 0, or 2 for bad input or a model that "
        "could not be trained or audited.",
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
        help=f"{QUICK_ROWS[0]:,} training and {QUICK_ROWS[1]:,} population rows, three "
        "strategies, one repeat (for tests)",
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
        default=min(2, os.cpu_count() or 1),
        help="parallel worker processes (default: 2 or the number of CPUs if fewer)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.set_defaults(handler=run)


def _check_arguments(args: argparse.Namespace) -> tuple[int, Path]:
    from epsstar.exceptions import InvalidInputError
    from epsstar.training.export import check_output_dir

    for name in ("jobs", "repeats"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise InvalidInputError(f"--{name} must be at least 1. Found {value}.")
    if args.seed < 0:
        raise InvalidInputError(f"--seed must be an integer ≥ 0. Found {args.seed}.")
    repeats = args.repeats if args.repeats is not None else (1 if args.quick else REPEATS)
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


class _Display:
    """Progress bars on a terminal (rich); one line per finished model otherwise."""

    def __init__(self, tasks: Sequence[Task], *, quiet: bool) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self.tasks = {task.index: task for task in tasks}
        self.quiet = quiet
        self.bars = not quiet and self.console.is_terminal
        self.progress: Any = None
        self.ids: dict[int, Any] = {}
        self.finished = 0

    def __enter__(self) -> _Display:
        if self.bars:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self.progress = Progress(
                TextColumn("{task.description:<24}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[status]}"),
                TimeElapsedColumn(),
                console=self.console,
            )
            self.progress.start()
            self.overall = self.progress.add_task("models", total=len(self.tasks), status="")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def message(self, message: tuple[Any, ...]) -> None:
        if not self.bars:
            return
        kind, index = message[0], message[1]
        task = self.tasks[index]
        if kind == "start":
            self.ids[index] = self.progress.add_task(
                f"{task.strategy} #{task.repeat}", total=task.config.epochs, status="training"
            )
            return
        bar = self.ids.get(index)
        if bar is None:
            return
        if kind == "epoch":
            epsilon = "" if message[4] is None else f"  ε {message[4]:.2f}"
            self.progress.update(
                bar, completed=message[2], status=f"loss {message[3]:.4f}{epsilon}"
            )
        else:  # "audit" or "report"
            self.progress.update(bar, status="auditing" if kind == "audit" else "report")

    def done(self, record: dict[str, Any]) -> None:
        self.finished += 1
        entry = record["entry"]
        if "error" in record:
            status = f"error: {record['error']}"
        else:
            result = record["result"]
            status = (
                f"Epsilon* {result['epsilon_star']:.4f}, AUROC "
                f"{_number(result['utility']['population']['auroc'])}"
            )
        line = (
            f"[{self.finished}/{len(self.tasks)}] {entry['strategy']} #{entry['repeat']}: {status}"
        )
        if self.bars:
            for index, task in self.tasks.items():
                if (task.strategy, task.repeat) == (entry["strategy"], entry["repeat"]):
                    bar = self.ids.pop(index, None)
                    if bar is not None:
                        self.progress.remove_task(bar)
            self.progress.advance(self.overall)
            self.progress.console.print(line, highlight=False)
        elif not self.quiet:
            print(line, file=sys.stderr, flush=True)


def _number(value: Any, spec: str = ".4f") -> str:
    return "-" if value is None else format(value, spec)


def _execute(tasks: list[Task], jobs: int, display: _Display) -> list[dict[str, Any]]:
    """Run every task (in ``jobs`` processes), longest first; records in task order."""
    records: dict[int, dict[str, Any]] = {}
    order = sorted(tasks, key=lambda task: -task.config.epochs)
    if jobs == 1:
        for task in order:
            record = run_task(task, display.message)
            records[task.index] = record
            display.done(record)
        return [records[task.index] for task in tasks]
    context = multiprocessing.get_context("spawn")
    messages = context.Queue()
    workers = min(jobs, len(tasks))
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=context,
        initializer=_init_worker,
        initargs=(messages, max(1, (os.cpu_count() or 1) // workers)),
    )
    try:
        futures: dict[Future[dict[str, Any]], int] = {
            pool.submit(run_task, task): task.index for task in order
        }
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
            _drain(messages, display)
            for future in finished:
                record = future.result()
                records[futures[future]] = record
                display.done(record)
        _drain(messages, display)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return [records[task.index] for task in tasks]


def _drain(messages: Any, display: _Display) -> None:
    while True:
        try:
            display.message(messages.get_nowait())
        except queue.Empty:
            return


def _table(records: list[dict[str, Any]], summaries: list[dict[str, Any]]) -> str:
    import numpy as np

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
        members = [
            r for r in records if r["entry"]["strategy"] == summary["strategy"] and "result" in r
        ]

        def mean(values: list[Any]) -> float | None:
            numbers = [v for v in values if v is not None]
            return float(np.mean(numbers)) if numbers else None

        params = summary["params"]
        achieved = [r["entry"]["params"].get("epsilon") for r in members]
        spread = (
            "-"
            if summary["epsilon_star_min"] is None
            else f"{summary['epsilon_star_min']:.4f}-{summary['epsilon_star_max']:.4f}"
        )
        rows.append(
            [
                summary["strategy"],
                f"{len(members)}/{summary['n_models']}",
                _number(params.get("target_epsilon"), "g"),
                _number(max((a for a in achieved if a is not None), default=None), ".3f"),
                _number(summary["epsilon_star_mean"]),
                spread,
                _number(summary["mechanism_epsilon"]),
                _number(mean([r["result"]["epsilon_lower_bound"] for r in members])),
                _number(mean([r["result"]["utility"]["population"]["auroc"] for r in members])),
                _number(mean([r["result"]["utility"]["population"]["accuracy"] for r in members])),
            ]
        )
    return aligned_table(rows, left_columns=1)


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    repeats, out = _check_arguments(args)
    _check_extras()
    from epsstar import __version__
    from epsstar.audit.files import atomic_write_json
    from epsstar.audit.many import summarise
    from epsstar.training.datasets import adult
    from epsstar.training.trainer import plan_privacy

    with_reports = reports_available()
    chosen = strategies(args.quick)
    seconds: dict[str, float] = {}
    if args.overwrite and out.is_dir():
        _clear(out)
    out.mkdir(parents=True, exist_ok=True)

    def step(text: str) -> None:
        if not args.quiet:
            print(f"{text} ...", file=sys.stderr, flush=True)

    step("reading UCI Adult and writing it as Parquet")
    data = adult()
    if args.quick:
        data = data.subsample(*QUICK_ROWS, seed=args.seed)
    train_path, population_path = data.write_parquet(out / "data")
    seconds["data"] = time.perf_counter() - started

    step("choosing the DP-SGD noise multipliers")
    planned_at = time.perf_counter()
    plans = {s.name: plan_privacy(s.config, data.n_train) for s in chosen}
    seconds["noise_search"] = time.perf_counter() - planned_at

    tasks: list[Task] = []
    for strategy in chosen:
        plan = plans[strategy.name]
        for repeat in range(repeats):
            config = replace(strategy.config, seed=args.seed + repeat)
            tasks.append(
                Task(
                    index=len(tasks),
                    strategy=strategy.name,
                    repeat=repeat,
                    config=config,
                    plan=plan,
                    train=str(train_path),
                    population=str(population_path),
                    model_dir=str(out / "models" / strategy.name / str(repeat)),
                    report=str(out / "reports" / f"{strategy.name}-{repeat}.html")
                    if with_reports
                    else None,
                    audit_seed=args.seed,
                    params=_params(config, plan),
                )
            )
    if with_reports:
        (out / "reports").mkdir(exist_ok=True)

    models_at = time.perf_counter()
    with _Display(tasks, quiet=args.quiet) as display:
        records = _execute(tasks, args.jobs, display)
    seconds["models"] = time.perf_counter() - models_at

    summaries = [s.to_dict() for s in summarise(records)]
    landscape: str | None = None
    landscape_error: str | None = None
    if with_reports:
        from epsstar.reports import render_landscape

        try:
            landscape = str(render_landscape(records, out / "landscape.html", utility="auroc"))
        except Exception as error:
            landscape_error = f"{type(error).__name__}: {error}"
    failed = [r for r in records if "error" in r]
    seconds["total"] = time.perf_counter() - started
    payload = {
        "kind": "epsstar-demo",
        "epsstar_version": __version__,
        "dataset": {
            "name": "UCI Adult (Census Income)",
            "attribution": "Barry Becker and Ronny Kohavi, Adult, UCI Machine Learning "
            "Repository, 1996, https://doi.org/10.24432/C5XW20",
            "licence": "CC BY 4.0",
            "train": str(train_path),
            "population": str(population_path),
            "label_column": LABEL,
            "label": "1 = income >50K",
            "n_train": data.n_train,
            "n_population": data.n_population,
            "n_features": len(data.feature_names),
            "subsample": bool(args.quick),
        },
        "settings": {
            "quick": bool(args.quick),
            "repeats": repeats,
            "seed": args.seed,
            "jobs": args.jobs,
            "strategies": [s.name for s in chosen],
        },
        "reports_available": with_reports,
        "landscape": landscape,
        "landscape_error": landscape_error,
        "n_models": len(records),
        "n_failed": len(failed),
        "strategies": summaries,
        "models": records,
        "seconds": {key: round(value, 1) for key, value in seconds.items()},
    }
    results = out / "results.json"
    atomic_write_json(results, payload)

    print(
        f"Epsilon* of {len(records)} models trained on UCI Adult ({data.n_train:,} training and "
        f"{data.n_population:,} population rows; {repeats} per strategy; "
        f"δ = 1/(n ln n) = {_delta(records)}):\n"
    )
    print(_table(records, summaries))
    print(
        "\nEpsilon* mean/min-max over the repeats; mechanism = log mean exp(Epsilon*) "
        "(Theorem 2); lower bound = mean 95 % lower bound; AUROC and accuracy on the "
        "population rows."
    )
    print("\nFiles:")
    print(f"  data       {train_path}  {population_path}")
    print(
        f"  models     {out / 'models'}{os.sep} (<strategy>/<repeat>/: model.onnx, model.pt, "
        "training.json)"
    )
    print(f"  results    {results}")
    if with_reports:
        written = sum(1 for r in records if r.get("report"))
        print(f"  reports    {out / 'reports'}{os.sep} ({written} of {len(records)} models)")
        if landscape is not None:
            print(f"  landscape  {landscape}")
        else:
            print(f"  landscape  not written: {landscape_error}")
    else:
        print("  reports    unavailable (epsstar.reports does not provide render/render_landscape)")
    for record in failed:
        entry = record["entry"]
        print(f"FAILED {entry['strategy']} #{entry['repeat']}: {record['error']}", file=sys.stderr)
    print(f"\nDone in {seconds['total']:.0f} s.")
    return EXIT_USAGE if failed else EXIT_OK


def _delta(records: list[dict[str, Any]]) -> str:
    for record in records:
        if "result" in record:
            return f"{record['result']['delta']:.3g}"
    return "-"


def _params(config: TrainingConfig, plan: PrivacyPlan | None) -> dict[str, Any]:
    """The strategy's hyper-parameters as ``epsstar sweep``'s manifest names them."""
    return {
        "private": config.private,
        "epochs": config.epochs,
        "batch_size": config.batch_size,
        "hidden": list(config.hidden),
        "lr": config.lr,
        "momentum": config.momentum,
        "clip": config.clip if config.private else None,
        "target_epsilon": config.target_epsilon,
        "delta": None if plan is None else plan.delta,
        "accountant": None if plan is None else config.accountant,
        "seed": config.seed,
    }
