"""Resumable grids of training runs, like those of §4.1 of the Epsilon* paper.

The paper is Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models".

A sweep is described by a TOML file (see ``docs/training.md``): the data, a
list of non-private baselines (one per epoch count) and a DP grid
(target ε × clip × batch size × microbatches × epochs), each repeated
``repeats`` times. Model r of strategy S goes to ``<out>/<S>/<r>/`` and is
trained with seed ``seed + r``.

A model directory counts as finished only when its ``training.json`` exists
(written last, atomically), so a sweep killed at any point restarts where it
stopped: an unfinished directory is trained again from scratch, and a finished
model is skipped untouched when the fingerprint in its ``training.json``
(:mod:`epsstar.training.runs.fingerprint`: every setting, the seed, the data's content
hashes, label and feature columns) equals the one the sweep would train now.
Any other finished model — other settings or data, no fingerprint, an
unreadable ``training.json`` — stops the sweep before it trains anything,
unless ``overwrite`` asks to train such models again. After every finished
model ``<out>/manifest.csv`` is rewritten atomically from the ``training.json``
files on disk; relative paths in it are relative to the manifest's directory.

With a ``dask`` engine (the cluster of :mod:`epsstar.plumbing.runtime.dask_cluster`) every
unfinished model is one task on it: the worker reads the data (and checks that their
fingerprint is the one the sweep computed here), trains into a scratch folder and sends the
three files back; this process writes them, ``training.json`` last, with ``engine.json``
naming the worker beside them. A task that fails is reported and the others' models are
kept; running the sweep again trains the missing ones.

With ``workers`` > 1 the runs (or stacks) are trained in worker processes of this machine
(:mod:`epsstar.training.runs.sweep_workers`), the same models as in this process.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.plumbing.files.schema import Fields, Where, read_json
from epsstar.plumbing.files.staging import (
    atomic_write_bytes,
    check_output_folder,
    refuse_replacing_inputs,
)
from epsstar.plumbing.records.constraints import WholeNumber, check_fields, constraint
from epsstar.plumbing.records.json_types import JsonObject
from epsstar.plumbing.runtime.threads import choose_threads
from epsstar.training.data.tables import TabularData
from epsstar.training.results import EpochStats
from epsstar.training.runs.export import MODEL_FILES
from epsstar.training.runs.fingerprint import data_fingerprint, fingerprint, fingerprint_change
from epsstar.training.runs.pipeline import first_missing, load_inputs, train_to_directory
from epsstar.training.runs.record import RECORD_SCHEMA, ManifestCell, read_record, record_cells
from epsstar.training.runs.sweep_config import (
    MAX_MODELS,
    GridStrategy,
    SweepConfig,
    load_sweep_config,
)
from epsstar.training.runs.sweep_workers import (
    PlannedRun,
    RunDone,
    SweepData,
    Unit,
    plan_in_workers,
    train_in_workers,
    train_unit,
)
from epsstar.training.trainer import PrivacyPlan, TrainingConfig, check_memory, plan_privacy

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.engines.dask_engine import Engine
    from epsstar.plumbing.runtime.dask_cluster import TaskOutcome

__all__ = [
    "MANIFEST_COLUMNS",
    "MANIFEST_NAME",
    "MAX_MODELS",
    "GridStrategy",
    "SweepCompute",
    "SweepConfig",
    "SweepOutcome",
    "load_sweep_config",
    "manifest_rows",
    "run_sweep",
    "write_manifest",
]

MANIFEST_NAME = "manifest.csv"
MANIFEST_COLUMNS: tuple[str, ...] = (
    "model",
    "torchscript",
    "train_data",
    "population_data",
    "label_column",
    "features",
    "strategy",
    "repeat",
    "private",
    "epochs",
    "batch_size",
    "clip",
    "microbatches",
    "target_epsilon",
    "epsilon",
    "delta",
    "noise_multiplier",
    "accountant",
    "hidden",
    "lr",
    "momentum",
    "seed",
    "train_accuracy",
    "population_accuracy",
    "population_auroc",
)


@dataclass(frozen=True, slots=True)
class SweepCompute:
    """Where and how many models a sweep computes at once.

    ``stack`` > 1 trains up to that many models that take the same steps
    (:func:`epsstar.training.batched.stack_key`) as one batched computation, each the model
    its own run would give, their folders written when the whole stack is trained.
    ``workers`` > 1 trains the runs (or stacks) in that many worker processes of this
    machine (:mod:`epsstar.training.runs.sweep_workers`), the same models as here. With a
    ``dask`` ``engine`` every model is one task on the cluster, and no ``on_epoch`` is called
    (see the module's description). ``threads`` are the torch threads of each task or worker
    (``None``: the idle cores shared among the workers).
    """

    engine: Engine | None = None
    threads: int | None = None
    stack: int = field(default=1, metadata=constraint(WholeNumber()))
    workers: int = field(default=1, metadata=constraint(WholeNumber()))

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True, slots=True)
class SweepOutcome:
    """How many models were trained now and how many were already finished; with a dask
    engine, ``failed`` says which models could not be trained and why."""

    trained: int
    skipped: int
    manifest: Path
    failed: tuple[str, ...] = ()


def _runs(config: SweepConfig) -> Iterator[tuple[GridStrategy, int]]:
    for strategy in config.strategies:
        for repeat in range(config.repeats):
            yield strategy, repeat


def _cell(value: ManifestCell) -> str | int | float | bool:
    if value is None:
        return ""
    if isinstance(value, tuple):
        return ",".join(str(item) for item in value)
    return value


def _row(config: SweepConfig, label: str, repeat: int, record: Fields) -> dict[str, ManifestCell]:
    """The manifest row of one finished model from its checked ``training.json``."""
    relative = Path(label) / str(repeat)
    return {
        "model": (relative / MODEL_FILES["onnx"]).as_posix(),
        "torchscript": (relative / MODEL_FILES["torchscript"]).as_posix(),
        "train_data": str(config.data.resolve()),
        "population_data": "" if config.population is None else str(config.population.resolve()),
        "label_column": config.label_column,
        "features": config.features,
        "strategy": label,
        "repeat": repeat,
        **record_cells(record),
    }


def manifest_rows(config: SweepConfig, out: Path) -> list[dict[str, ManifestCell]]:
    """One row per finished model of the sweep, in grid order."""
    rows: list[dict[str, ManifestCell]] = []
    for strategy, repeat in _runs(config):
        record_path = out / strategy.label / str(repeat) / MODEL_FILES["record"]
        if not record_path.is_file():
            continue
        try:
            rows.append(_row(config, strategy.label, repeat, read_record(record_path)))
        except InputFileError as error:
            raise InputFileError(
                f"cannot list a finished model in the manifest ({error}); pass --overwrite to "
                f"train it again. Found {str(record_path)!r}."
            ) from None
    return rows


def write_manifest(config: SweepConfig, out: Path) -> Path:
    """Rewrite ``<out>/manifest.csv`` (atomically) from the finished models on disk."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(MANIFEST_COLUMNS), lineterminator="\n")
    writer.writeheader()
    for row in manifest_rows(config, out):
        writer.writerow({key: _cell(value) for key, value in row.items()})
    path = out / MANIFEST_NAME
    atomic_write_bytes(path, buffer.getvalue().encode("utf-8"))
    return path


def _record_problem(folder: Path, expected: JsonObject) -> str | None:
    """Why the finished model in ``folder`` is not the one ``expected`` describes, if it is not."""
    path = folder / MODEL_FILES["record"]
    try:
        document = read_json(path, MODEL_FILES["record"])
    except InputFileError as error:
        return f"its {MODEL_FILES['record']} cannot be read ({_reason(error, path)})"
    if not isinstance(document, dict):
        return f"its {MODEL_FILES['record']} is not a JSON object"
    for kind in ("onnx", "torchscript"):
        if not (folder / MODEL_FILES[kind]).is_file():
            return f"its {MODEL_FILES[kind]} is missing"
    change = fingerprint_change(document.get("fingerprint"), expected)
    if change is not None:
        return change
    try:
        RECORD_SCHEMA.check(document, Where(str(path)))
    except InputFileError as error:
        return f"its {MODEL_FILES['record']} is not as epsstar writes it ({_reason(error, path)})"
    return None


def _reason(error: InputFileError, path: Path) -> str:
    """The error's message without the file it names first (the caller names it)."""
    return str(error).removeprefix(f"{path}: ").split(". Found ")[0].rstrip(".")


def _finished_runs(
    config: SweepConfig, target: Path, data_part: JsonObject, overwrite: bool
) -> set[tuple[str, int]]:
    """The runs whose finished model can be kept; refuses any other finished model.

    With ``overwrite`` such a model's ``training.json`` is removed instead, so that it
    counts as unfinished (and is not listed in the manifest) until it is trained again.
    """
    finished: set[tuple[str, int]] = set()
    for strategy, repeat in _runs(config):
        folder = target / strategy.label / str(repeat)
        if not (folder / MODEL_FILES["record"]).is_file():
            continue
        expected = fingerprint(replace(strategy.config, seed=config.seed + repeat), data_part)
        problem = _record_problem(folder, expected)
        if problem is None:
            finished.add((strategy.label, repeat))
        elif overwrite:
            (folder / MODEL_FILES["record"]).unlink()
        else:
            raise InvalidInputError(
                f"the sweep output holds a model that is not the one this sweep would train: "
                f"{problem}; pass --overwrite to train it again. "
                f"Found {str(folder / MODEL_FILES['record'])!r}."
            )
    return finished


def _output_directory(config: SweepConfig, out: str | os.PathLike[str] | None) -> Path:
    target = Path(out) if out is not None else config.out
    if target is None:
        raise InvalidInputError(
            "the sweep needs an output directory: give --out or 'out' in the config."
        )
    return check_output_folder("--out" if out is not None else "the sweep's 'out'", target)


#: The file beside a model trained on a Dask cluster that names the worker that trained it.
ENGINE_FILE = "engine.json"


def _train_task(
    config: SweepConfig,
    settings: TrainingConfig,
    plan: PrivacyPlan | None,
    data_part: JsonObject,
    threads: int | None,
) -> tuple[dict[str, bytes], float, float | None]:
    """Dask task: train one model into a scratch folder; its files, seconds and ε.

    The worker reads the data itself and refuses data whose fingerprint differs from
    ``data_part``, the one the sweep computed where it started.
    """
    from epsstar.plumbing.runtime.threads import apply_threads
    from epsstar.training.runs.pipeline import load_inputs

    if threads is not None:
        apply_threads(threads)
    data, population = load_inputs(
        config.data, config.label_column, config.population, config.features
    )
    found = data_fingerprint(data, population)
    if found != data_part:
        raise InvalidInputError(
            f"the data this worker read are not those the sweep started with (other files "
            f"or contents at the same paths). Found {str(config.data)!r}."
        )
    with tempfile.TemporaryDirectory(prefix="epsstar-") as scratch:
        folder = Path(scratch) / "model"
        result = train_to_directory(
            data,
            settings,
            folder,
            population=population,
            progress=False,
            plan=plan,
            data_part=data_part,
        )
        files = {name: (folder / name).read_bytes() for name in MODEL_FILES.values()}
    epsilon = None if result.privacy is None else result.privacy.epsilon
    return files, result.wall_time_seconds, epsilon


def _plans(
    pending: list[tuple[GridStrategy, int]], n_records: int, log: Callable[[str], None] | None
) -> dict[str, PrivacyPlan | None]:
    """The σ plan of each strategy with runs to train, chosen once here."""
    plans: dict[str, PrivacyPlan | None] = {}
    for strategy, _ in pending:
        if strategy.label not in plans:
            if strategy.config.target_epsilon is not None and log is not None:
                log(f"{strategy.label}: choosing the noise multiplier for the target ε ...")
            plans[strategy.label] = plan_privacy(strategy.config, n_records)
    return plans


def _sweep_on_dask(
    config: SweepConfig,
    target: Path,
    pending: list[tuple[GridStrategy, int]],
    engine: Engine,
    job: _Job,
    log: Callable[[str], None] | None,
) -> tuple[int, tuple[str, ...]]:
    """Train the ``pending`` runs as one Dask task each; (models trained, failures).

    ``job`` holds the plans by strategy label, the data's fingerprint and the threads.
    """
    from epsstar.plumbing.runtime.dask_cluster import dask_client, run_tasks

    tasks = [
        (
            config,
            replace(strategy.config, seed=config.seed + repeat),
            job.plans[strategy.label],
            job.data_part,
            job.threads,
        )
        for strategy, repeat in pending
    ]
    failures: list[str] = []
    trained = [0]

    def placed(outcome: TaskOutcome[tuple[dict[str, bytes], float, float | None]]) -> None:
        strategy, repeat = pending[outcome.index]
        where = f"{strategy.label} repeat {repeat}"
        if outcome.value is None:
            failures.append(f"{where}: {outcome.error}")
            if log is not None:
                log(f"[{outcome.index + 1}/{len(pending)}] {where}: failed: {outcome.error}")
            return
        files, seconds, epsilon = outcome.value
        folder = target / strategy.label / str(repeat)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / MODEL_FILES["record"]).unlink(missing_ok=True)
        for name, content in files.items():
            if name != MODEL_FILES["record"]:
                atomic_write_bytes(folder / name, content)
        ran = {**engine.to_dict(), "worker": outcome.worker}
        atomic_write_bytes(folder / ENGINE_FILE, (json.dumps(ran, indent=2) + "\n").encode())
        atomic_write_bytes(folder / MODEL_FILES["record"], files[MODEL_FILES["record"]])
        trained[0] += 1
        write_manifest(config, target)
        if log is not None:
            said = "" if epsilon is None else f", epsilon {epsilon:.4g}"
            log(
                f"[{outcome.index + 1}/{len(pending)}] {where}: done in {seconds:.1f} s{said} "
                f"(worker {outcome.worker})"
            )

    with dask_client(engine.scheduler, engine.workers) as client:
        run_tasks(client, _train_task, tasks, placed, name="epsstar-train")
    return trained[0], tuple(failures)


@dataclass(frozen=True, slots=True)
class _Job:
    """What every model of one sweep shares: the data, their fingerprint, the σ plans by
    strategy label, the torch threads of each task (on a Dask cluster) or worker process
    (``None``: chosen for the workers), the runs per unit and the worker processes."""

    data: TabularData
    population: TabularData | None
    data_part: JsonObject
    plans: dict[str, PrivacyPlan | None]
    threads: int | None = None
    stack: int = 1
    workers: int = 1


def _outputs(config: SweepConfig, target: Path) -> list[tuple[str, Path]]:
    """Every file the sweep may write (model files, engine files, the manifest)."""
    names = [*MODEL_FILES.values(), ENGINE_FILE]
    files = [("--out", target / MANIFEST_NAME)]
    for strategy, repeat in _runs(config):
        files += [("--out", target / strategy.label / str(repeat) / name) for name in names]
    return files


def _inputs(config: SweepConfig) -> list[tuple[str, Path]]:
    """The files the sweep reads: its data, population and configuration file."""
    found = [("the sweep's data", config.data)]
    if config.population is not None:
        found.append(("the sweep's population", config.population))
    if config.source is not None:
        found.append(("the sweep config", config.source))
    return found


@contextlib.contextmanager
def _made_for(target: Path) -> Iterator[None]:
    """Make ``target``; if the block fails before a model is finished there, remove the
    folders made for it."""
    created = first_missing(target)
    target.mkdir(parents=True, exist_ok=True)
    try:
        yield
    except BaseException:
        if created is not None and not any(target.glob(f"*/*/{MODEL_FILES['record']}")):
            shutil.rmtree(created, ignore_errors=True)
        raise


#: A run of a sweep to train: its place in the grid's order, its strategy and repeat.
_Run = tuple[int, GridStrategy, int]
#: The runs of one unit, before they are planned.
_Members = list[_Run]


def _units(config: SweepConfig, finished: set[tuple[str, int]], job: _Job) -> list[_Members]:
    """The unfinished runs in grid order, one unit each; with ``job.stack`` > 1, up to that
    many runs that take the same steps per unit (:func:`epsstar.training.batched.stack_key`)."""
    runs = [
        (index, strategy, repeat)
        for index, (strategy, repeat) in enumerate(_runs(config), start=1)
        if (strategy.label, repeat) not in finished
    ]
    if job.stack == 1:
        return [[run] for run in runs]
    from epsstar.training.batched import stack_key

    groups: dict[tuple[object, ...], list[_Run]] = {}
    for run in runs:
        groups.setdefault(stack_key(run[1].config, job.data.n_records), []).append(run)
    return [g[i : i + job.stack] for g in groups.values() for i in range(0, len(g), job.stack)]


def _planned(
    config: SweepConfig, target: Path, members: _Members, job: _Job, hooks: _Hooks
) -> Unit:
    """The unit of ``members``: σ chosen once per strategy (said first), and their folders
    cleared of what an unfinished run or a run on a cluster left."""
    runs = []
    for index, strategy, repeat in members:
        if strategy.label not in job.plans:
            if strategy.config.target_epsilon is not None:
                hooks.planning(strategy.label)
            job.plans[strategy.label] = plan_privacy(strategy.config, job.data.n_records)
        folder = target / strategy.label / str(repeat)
        if folder.is_dir():
            for leftover in folder.glob(".*.tmp"):
                leftover.unlink()
            (folder / ENGINE_FILE).unlink(missing_ok=True)  # from an earlier run on a cluster
        settings = replace(strategy.config, seed=config.seed + repeat)
        runs.append(
            PlannedRun(index, strategy.label, repeat, settings, folder, job.plans[strategy.label])
        )
    return Unit(tuple(runs), stacked=job.stack > 1)


def _plan_side_by_side(members: list[_Members], job: _Job, hooks: _Hooks, workers: int) -> None:
    """Search the σ of the units' target ε in ``workers`` processes at once, when more than one
    is to be searched (:func:`~epsstar.training.runs.sweep_workers.plan_in_workers`)."""
    searched = {
        strategy.label: strategy.config
        for unit in members
        for _, strategy, _ in unit
        if strategy.label not in job.plans and strategy.config.target_epsilon is not None
    }
    if len(searched) < 2:
        return
    for label in searched:
        hooks.planning(label)
    job.plans.update(plan_in_workers(searched, job.data.n_records, workers=workers))


def _reported(
    config: SweepConfig, target: Path, hooks: _Hooks
) -> Callable[[Unit, list[RunDone]], None]:
    """What follows a finished unit: the manifest rewritten, a line per run."""
    total = len(config.strategies) * config.repeats

    def report(unit: Unit, done: list[RunDone]) -> None:
        write_manifest(config, target)
        others = f" (with {len(unit.runs) - 1} others)" if unit.stacked else ""
        for run, (seconds, epsilon) in zip(unit.runs, done, strict=True):
            said = "" if epsilon is None else f", epsilon {epsilon:.4g}"
            hooks.say(f"[{run.index}/{total}] {run.name}: done in {seconds:.1f} s{others}{said}")

    return report


def _train_here(
    config: SweepConfig, target: Path, finished: set[tuple[str, int]], job: _Job, hooks: _Hooks
) -> int:
    """Train every unfinished model, one unit after another in this process, or in
    ``job.workers`` worker processes (:mod:`epsstar.training.runs.sweep_workers`); how many."""
    members = _units(config, finished, job)
    report = _reported(config, target, hooks)
    shared = SweepData(job.data, job.population, job.data_part)
    total = len(config.strategies) * config.repeats
    workers = min(job.workers, len(members))
    if workers > 1:
        _plan_side_by_side(members, job, hooks, workers)
        units = [_planned(config, target, unit, job, hooks) for unit in members]
        threads = choose_threads(workers, job.threads)
        train_in_workers(
            shared, units, workers=workers, threads=threads, on_done=report, on_epoch=hooks.epoch
        )
        return sum(len(unit.runs) for unit in units)
    for unit_members in members:
        unit = _planned(config, target, unit_members, job, hooks)
        first = unit.runs[0]
        description = f"[{first.index}/{total}] " + (
            f"{first.label} and others" if unit.stacked else f"{first.label} #{first.repeat}"
        )
        done = train_unit(
            shared, unit, progress=hooks.progress, description=description, on_epoch=hooks.epoch
        )
        report(unit, done)
    return sum(len(unit) for unit in members)


@dataclass(frozen=True, slots=True)
class _Hooks:
    """How a sweep reports: progress bars, log lines, epochs and σ searches."""

    progress: bool | None
    log: Callable[[str], None] | None
    on_epoch: Callable[[str, int, EpochStats], None] | None
    on_plan: Callable[[str], None] | None

    def say(self, message: str) -> None:
        if self.log is not None:
            self.log(message)

    def planning(self, label: str) -> None:
        """The search of a strategy's σ for its target ε starts."""
        self.say(f"{label}: choosing the noise multiplier for the target ε ...")
        if self.on_plan is not None:
            self.on_plan(label)

    def epoch(self, run: PlannedRun, stats: EpochStats) -> None:
        if self.on_epoch is not None:
            self.on_epoch(run.label, run.repeat, stats)


def run_sweep(
    config: SweepConfig,
    out: str | os.PathLike[str] | None = None,
    *,
    overwrite: bool = False,
    progress: bool | None = None,
    log: Callable[[str], None] | None = None,
    on_epoch: Callable[[str, int, EpochStats], None] | None = None,
    on_plan: Callable[[str], None] | None = None,
    compute: SweepCompute | None = None,
) -> SweepOutcome:
    """Train every unfinished model of the grid, rewriting the manifest after each one,
    where and as many at once as ``compute`` says (:class:`SweepCompute`; by default one
    at a time, here).

    Finished models made with other settings or data are refused unless ``overwrite``
    (see the module's description), and so is an output file that would replace the
    data, the population or the sweep file. ``on_epoch(strategy label, repeat, stats)`` is
    called after every epoch, ``on_plan(strategy label)`` before the noise multiplier of a
    target ε is searched. A Ctrl-C or an error leaves the model being trained unwritten,
    and removes the output folder if this run made it and finished no model in it.
    """
    compute = compute or SweepCompute()
    engine, threads, stack = compute.engine, compute.threads, compute.stack
    target = _output_directory(config, out)
    refuse_replacing_inputs(_outputs(config, target), _inputs(config))
    data, population = load_inputs(
        config.data, config.label_column, config.population, config.features
    )
    for strategy in config.strategies:
        strategy.config.validate(data.n_records)
        check_memory(strategy.config, data)
    data_part = data_fingerprint(data, population)
    finished = _finished_runs(config, target, data_part, overwrite) if target.is_dir() else set()
    with _made_for(target):
        if engine is not None and engine.on_dask:
            pending = [run for run in _runs(config) if (run[0].label, run[1]) not in finished]
            job = _Job(data, population, data_part, _plans(pending, data.n_records, log), threads)
            done, failed = _sweep_on_dask(config, target, pending, engine, job, log)
            manifest = write_manifest(config, target)
            return SweepOutcome(
                trained=done, skipped=len(finished), manifest=manifest, failed=failed
            )
        trained = _train_here(
            config,
            target,
            finished,
            _Job(data, population, data_part, {}, threads, stack=stack, workers=compute.workers),
            _Hooks(progress, log, on_epoch, on_plan),
        )
        manifest = write_manifest(config, target)
    return SweepOutcome(trained=trained, skipped=len(finished), manifest=manifest)
