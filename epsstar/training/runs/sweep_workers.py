"""A sweep's units of work, trained here or in worker processes (``epsstar sweep --workers N``).

A unit is one run of the grid, or a stack of runs that take the same steps (``--stack``),
planned by the sweep (σ chosen, folder cleared of leftovers) before it is trained.
:func:`train_unit` trains one into its folders as the sweep always has (``training.json``
written last, atomically), so a unit stopped half way is trained again on resume.

:func:`train_in_workers` hands the units, longest first, to spawned worker processes
(:func:`epsstar.audit.engines.pool.run_in_processes`; torch and ``fork`` do not mix), each
given the data once and its own torch threads; :func:`plan_in_workers` searches the σ of
several target ε side by side first (the search, not the training, takes most of a small
grid's time). A worker writes its runs' folders itself;
this process hears of each finished unit (to rewrite the manifest and print its lines) and
of every epoch, through a queue. The same seeds and σ plans give the same models bit for
bit wherever they are trained. Ctrl-C (or an error here) stops the workers, so no run is
written after the sweep stopped. A worker that dies stops the sweep with
:class:`WorkerDiedError`, which names the runs it may have been training; the finished runs stay.
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from epsstar.exceptions import EpsstarError
from epsstar.plumbing.records.json_types import JsonObject
from epsstar.training.data.tables import TabularData
from epsstar.training.results import EpochStats, TrainingResult
from epsstar.training.trainer import PrivacyPlan, TrainingConfig

__all__ = [
    "PlannedRun",
    "RunDone",
    "SweepData",
    "Unit",
    "WorkerDiedError",
    "epoch_cost",
    "plan_in_workers",
    "train_in_workers",
    "train_unit",
]


class WorkerDiedError(EpsstarError):
    """A worker process of a sweep stopped without a result (killed, out of memory)."""


@dataclass(frozen=True, slots=True)
class PlannedRun:
    """One run ready to train: its place in the grid (from 1), strategy label, repeat,
    settings (its seed set), folder and σ plan."""

    index: int
    label: str
    repeat: int
    config: TrainingConfig
    folder: Path
    plan: PrivacyPlan | None

    @property
    def name(self) -> str:
        """The run as the sweep's lines name it."""
        return f"{self.label} repeat {self.repeat}"


@dataclass(frozen=True, slots=True)
class Unit:
    """Runs trained as one computation when ``stacked`` (``--stack``), else one run."""

    runs: tuple[PlannedRun, ...]
    stacked: bool


@dataclass(frozen=True, slots=True)
class SweepData:
    """What every run of a sweep trains on: the data, the population and their fingerprint."""

    data: TabularData
    population: TabularData | None
    data_part: JsonObject


#: A finished run's wall-clock seconds and ε (None without privacy).
RunDone = tuple[float, float | None]


def epoch_cost(config: TrainingConfig) -> int:
    """Relative time of one epoch: an epoch of DP-SGD takes about twice a non-private one."""
    return 2 if config.private else 1


def _done(result: TrainingResult) -> RunDone:
    return result.wall_time_seconds, None if result.privacy is None else result.privacy.epsilon


def train_unit(
    shared: SweepData,
    unit: Unit,
    *,
    progress: bool | None = False,
    description: str = "training",
    on_epoch: Callable[[PlannedRun, EpochStats], None] | None = None,
) -> list[RunDone]:
    """Train the unit's runs into their folders (replacing what an unfinished run left)."""
    from epsstar.training.runs.many import train_to_directories
    from epsstar.training.runs.pipeline import train_to_directory

    runs = unit.runs
    if not unit.stacked:
        (run,) = runs
        result = train_to_directory(
            shared.data,
            run.config,
            run.folder,
            population=shared.population,
            overwrite=True,
            progress=progress,
            description=description,
            plan=run.plan,
            on_epoch=None if on_epoch is None else functools.partial(on_epoch, run),
            data_part=shared.data_part,
        )
        return [_done(result)]
    results = train_to_directories(
        shared.data,
        [run.config for run in runs],
        [run.folder for run in runs],
        population=shared.population,
        overwrite=True,
        progress=progress,
        description=description,
        plans=[run.plan for run in runs],
        on_epoch=None if on_epoch is None else lambda k, stats: on_epoch(runs[k], stats),
    )
    return [_done(result) for result in results]


# --- in worker processes ---------------------------------------------------------------------

#: The worker's queue to the sweep (messages ("worker", pid), ("started", unit) and ("epoch",
#: unit, run, stats)) and the data, set by its initializer.
_worker: dict[str, Any] = {}


def _start_worker(messages: Any, threads: int, shared: SweepData) -> None:
    """A worker's initializer: the queue to this process, its torch threads, the data; Ctrl-C
    is left to this process, which stops the workers."""
    from epsstar.plumbing.runtime.threads import apply_threads

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    messages.put(("worker", os.getpid()))
    apply_threads(threads)
    _worker.update(messages=messages, shared=shared)


def _train_in_worker(number: int, unit: Unit) -> list[RunDone]:
    messages = _worker["messages"]
    messages.put(("started", number))

    def epoch(run: PlannedRun, stats: EpochStats) -> None:
        messages.put(("epoch", number, unit.runs.index(run), stats))

    return train_unit(_worker["shared"], unit, on_epoch=epoch)


def plan_in_workers(
    configs: dict[str, TrainingConfig], n_records: int, *, workers: int
) -> dict[str, PrivacyPlan | None]:
    """The σ plan of each strategy (by label), searched side by side in ``workers`` spawned
    processes: the same plans :func:`~epsstar.training.trainer.plan_privacy` gives here."""
    from concurrent.futures.process import BrokenProcessPool

    from epsstar.audit.engines.pool import run_in_processes
    from epsstar.training.trainer import plan_privacy

    tasks = [(config, n_records) for config in configs.values()]
    try:
        plans = run_in_processes(plan_privacy, tasks, jobs=min(workers, len(tasks)))
    except BrokenProcessPool:
        raise WorkerDiedError(
            f"a worker process died while choosing the noise multiplier of "
            f"{' or '.join(configs)} (killed, or out of memory?); run the sweep again. "
            f"Found no model trained in this run."
        ) from None
    return dict(zip(configs, plans, strict=True))


def _longest_first(units: Sequence[Unit]) -> list[int]:
    """The units' positions, longest training first (so that no long one starts last)."""

    def cost(number: int) -> int:
        config = units[number].runs[0].config
        return config.epochs * epoch_cost(config)

    return sorted(range(len(units)), key=lambda number: -cost(number))


def train_in_workers(
    shared: SweepData,
    units: Sequence[Unit],
    *,
    workers: int,
    threads: int,
    on_done: Callable[[Unit, list[RunDone]], None],
    on_epoch: Callable[[PlannedRun, EpochStats], None] | None = None,
) -> None:
    """Train ``units`` in ``workers`` spawned processes of ``threads`` torch threads each;
    ``on_done`` and ``on_epoch`` are called here (see the module's description)."""
    from concurrent.futures.process import BrokenProcessPool

    from epsstar.audit.engines.pool import run_in_processes

    messages = multiprocessing.get_context("spawn").SimpleQueue()
    order = _longest_first(units)
    started: set[int] = set()
    finished: set[int] = set()
    pids: set[int] = set()

    def drain() -> None:
        while not messages.empty():
            kind, number, *rest = messages.get()
            if kind == "worker":
                pids.add(number)
            elif kind == "started":
                started.add(number)
            elif on_epoch is not None:
                on_epoch(units[number].runs[rest[0]], rest[1])

    def done(position: int, result: list[RunDone]) -> None:
        drain()
        finished.add(order[position])
        on_done(units[order[position]], result)

    try:
        run_in_processes(
            _train_in_worker,
            [(number, units[number]) for number in order],
            jobs=workers,
            on_done=done,
            on_tick=drain,
            initializer=functools.partial(_start_worker, messages, threads, shared),
        )
    except BrokenProcessPool:
        drain()
        raise WorkerDiedError(_died(units, started, finished)) from None
    except BaseException:  # Ctrl-C or an error here: no worker goes on training
        drain()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        raise


def _died(units: Sequence[Unit], started: set[int], finished: set[int]) -> str:
    """The one line of a worker that died: the runs that were in training, and what is kept."""
    running = [run.name for n in sorted(started - finished) for run in units[n].runs]
    kept = sum(len(units[n].runs) for n in finished)
    where = " or ".join(running) if running else "a run of the sweep"
    return (
        f"a worker process died while training {where} (killed, or out of memory?); the "
        f"finished models are kept: run the sweep again to train the others. Found {kept} of "
        f"{sum(len(unit.runs) for unit in units)} models trained in this run."
    )
