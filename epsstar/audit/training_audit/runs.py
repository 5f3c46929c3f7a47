"""The training runs of an audit: which canaries each includes, and running them.

One run (Steinke, Nasr & Jagielski 2023, "Privacy Auditing with One (1) Training Run"): every canary
is included with probability ½ and the procedure trains once. Many runs (§III-C of Nasr et al. 2021,
"Adversary Instantiation: Lower Bounds for Differentially Private Machine Learning"): one canary of
each kind, included in R runs and left out of R others; which runs are which is a seeded shuffle, so
that the runs with the canary are not all first. Each run has its own seed, drawn from the audit's
(:func:`derived_seed`), and is independent of the others, so runs go through the engines of
``audit-many``: this machine's processes (:func:`~epsstar.audit.engines.pool.run_in_processes`,
``--jobs``) or one task per run on a Dask cluster
(:func:`~epsstar.audit.engines.dask_engine.run_tasks`). A finished run is kept in the
:class:`~.store.RunStore` as it finishes, so an interrupted audit resumes with the others.

A procedure that can train several runs together (:class:`Stacking`: epsstar's own trainer,
``epsstar.training.threat_models.stacked_runs``) is handed its runs in *stacks* of at most
``stack_size`` runs, in the order of the plans: a stack is then the unit of work of a worker
process or a Dask task, its runs are kept in the store when the stack finishes (a stack
stopped in the middle is trained again on resuming; the runs of finished stacks are not),
and progress is reported run by run as each stack finishes.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from epsstar.audit.engines.pool import run_in_processes
from epsstar.audit.training_audit.frames import combine, read_frame, write_frame
from epsstar.audit.training_audit.procedure import Procedure, RunRequest, RunScores
from epsstar.audit.training_audit.store import RunStore
from epsstar.audit.training_audit.threat_models import CanaryKind, ThreatModelName
from epsstar.exceptions import InvalidInputError

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.engines.dask_engine import Engine, TaskOutcome

__all__ = [
    "Arm",
    "RunInputs",
    "RunPlan",
    "RunProgress",
    "Stacking",
    "derived_seed",
    "execute",
    "run_once",
    "run_stack_once",
]

Arm = Literal["one", "with", "without"]

#: What each derived seed is for (the second word of its seed sequence).
SEED_PURPOSES = {
    "population": 1,
    "crafted": 2,
    "gradient": 3,
    "inclusion-population": 4,
    "inclusion-crafted": 5,
    "inclusion-gradient": 6,
    "arms": 7,
    "runs": 8,
    "split": 9,
    "memorise": 10,
    "train-records": 11,
    "pretrain": 12,
    "text": 13,
    "inclusion-text": 14,
}


def derived_seed(seed: int, purpose: str, index: int = 0) -> int:
    """A 32-bit seed for ``purpose`` (and run ``index``) from the audit's ``seed``."""
    sequence = np.random.SeedSequence([seed, SEED_PURPOSES[purpose], index])
    return int(sequence.generate_state(1)[0])


@dataclass(frozen=True, slots=True)
class RunPlan:
    """Run ``index``: its seed, its arm, and for each kind of canary which ones it includes."""

    index: int
    seed: int
    arm: Arm
    included: dict[CanaryKind, tuple[bool, ...]]


@dataclass(frozen=True, slots=True)
class RunInputs:
    """What every run reads: the rows of ``--train`` it trains on (``--train``, or the sample
    of ``--train-records``) and their number, the canaries' tables (in ``--train``'s format),
    and how many copies of each included canary its table holds."""

    train: Path
    train_records: int
    canaries: dict[CanaryKind, Path]
    threat_models: tuple[ThreatModelName, ...]
    canary_repeats: int = 1
    #: The training table's columns (an empty JSON Lines sample, ``--train-records 0``, keeps
    #: none of its own).
    columns: tuple[str, ...] = ()
    #: Whether the tables hold text records (read as text, :func:`~.frames.read_frame`).
    text: bool = False


@dataclass(frozen=True, slots=True)
class RunProgress:
    """A run has finished: ``done`` of ``total`` (those resumed count as done), the run's arm
    and seconds, and the seconds left at this pace (``None`` until a run of this session has
    finished)."""

    done: int
    total: int
    index: int
    arm: Arm
    seconds: float
    left: float | None


@runtime_checkable
class Stacking(Protocol):
    """A procedure that trains several runs together (see the module)."""

    def stack_size(self, threat_models: tuple[ThreatModelName, ...]) -> int:
        """How many runs scored under ``threat_models`` it trains together (1: one at a time)."""
        ...

    def run_stack(self, requests: list[RunRequest]) -> list[RunScores]:
        """Train the runs of ``requests`` and score their canaries, in order."""
        ...


def _request(plan: RunPlan, inputs: RunInputs, scratch: Path) -> RunRequest:
    """Run ``plan``'s request, its training table written in ``scratch``."""
    train = read_frame(inputs.train, "--train", allow_empty=True, text=inputs.text)
    if train.columns.empty:
        train = pd.DataFrame(columns=list(inputs.columns))
    included = []
    for kind, path in inputs.canaries.items():
        bits = np.asarray(plan.included.get(kind, ()), dtype=bool)
        frame = read_frame(path, f"the {kind} canaries", text=inputs.text)
        included.append(frame.iloc[np.repeat(np.flatnonzero(bits), inputs.canary_repeats)])
    table = write_frame(
        combine(train, included, plan.seed), scratch / f"train{inputs.train.suffix.lower()}"
    )
    runs = scratch / "run"
    runs.mkdir()
    return RunRequest(
        index=plan.index,
        seed=plan.seed,
        train=table,
        base_train=inputs.train,
        base_records=inputs.train_records,
        canaries=dict(inputs.canaries),
        gradient_included=plan.included.get("gradient", ()),
        threat_models=inputs.threat_models,
        scratch=runs,
    )


def run_once(procedure: Procedure, plan: RunPlan, inputs: RunInputs) -> RunScores:
    """Write run ``plan``'s training table in a scratch folder and have ``procedure`` train on it
    (a module-level function: the task of a worker process or a Dask worker)."""
    with tempfile.TemporaryDirectory(prefix="epsstar-run-") as scratch:
        return procedure.run(_request(plan, inputs, Path(scratch)))


def run_stack_once(
    procedure: Stacking, plans: Sequence[RunPlan], inputs: RunInputs
) -> list[RunScores]:
    """:func:`run_once` for a stack of runs trained together (one scratch folder per run)."""
    with tempfile.TemporaryDirectory(prefix="epsstar-runs-") as scratch:
        requests = []
        for plan in plans:
            folder = Path(scratch) / f"run-{plan.index + 1:05d}"
            folder.mkdir()
            requests.append(_request(plan, inputs, folder))
        return procedure.run_stack(requests)


class _Pace:
    """Progress of the runs of this session, for :class:`RunProgress`."""

    def __init__(self, total: int, resumed: int, jobs: int) -> None:
        self.total, self.done, self.jobs = total, resumed, jobs
        self.fresh = 0
        self.start = time.perf_counter()

    def finished(self, plans: list[RunPlan], scores: list[RunScores]) -> list[RunProgress]:
        """One event per run of a finished stack; the time left is reckoned once the whole
        stack is counted (its runs end together)."""
        first = self.done
        self.done += len(plans)
        self.fresh += len(plans)
        elapsed = time.perf_counter() - self.start
        left = elapsed / self.fresh * (self.total - self.done)
        return [
            RunProgress(first + i + 1, self.total, plan.index, plan.arm, run.seconds, left)
            for i, (plan, run) in enumerate(zip(plans, scores, strict=True))
        ]


def _stacks(procedure: Procedure, todo: list[RunPlan], inputs: RunInputs) -> list[list[RunPlan]]:
    """The runs still to do, in stacks of the procedure's size (one run each when it has none)."""
    size = 1
    if isinstance(procedure, Stacking):
        size = max(1, procedure.stack_size(inputs.threat_models))
    return [todo[i : i + size] for i in range(0, len(todo), size)]


def run_group(procedure: Procedure, plans: Sequence[RunPlan], inputs: RunInputs) -> list[RunScores]:
    """The runs of ``plans``: trained together when the procedure stacks, else one by one (the
    task of a worker process or a Dask worker)."""
    if len(plans) > 1 and isinstance(procedure, Stacking):
        return run_stack_once(procedure, plans, inputs)
    return [run_once(procedure, plan, inputs) for plan in plans]


def _on_dask(
    engine: Engine,
    tasks: list[tuple[Procedure, list[RunPlan], RunInputs]],
    finished: Callable[[list[RunPlan], list[RunScores]], None],
) -> None:
    """One Dask task per stack of runs; the first failure is raised once every task has ended
    (the finished runs are kept)."""
    from epsstar.audit.engines.dask_engine import dask_client, run_tasks

    errors: list[str] = []

    def done(outcome: TaskOutcome[list[RunScores]]) -> None:
        if outcome.value is None:
            errors.append(outcome.error or "lost")
        else:
            finished(tasks[outcome.index][1], outcome.value)

    with dask_client(engine) as client:
        run_tasks(client, run_group, tasks, done, name="epsstar-training-run", keep=False)
    if errors:
        raise InvalidInputError(errors[0])


def execute(
    procedure: Procedure,
    plans: Sequence[RunPlan],
    inputs: RunInputs,
    store: RunStore,
    *,
    jobs: int = 1,
    engine: Engine | None = None,
    on_progress: Callable[[RunProgress], None] | None = None,
    initializer: Callable[[], None] | None = None,
) -> dict[int, RunScores]:
    """Every run of ``plans``, those in ``store`` read back and the others done and kept there.

    ``initializer`` runs once in each worker process (torch's threads, say).
    """
    results = store.finished(len(plans))
    todo = [plan for plan in plans if plan.index not in results]
    pace = _Pace(len(plans), len(plans) - len(todo), jobs)

    def finished(stack: list[RunPlan], scores: list[RunScores]) -> None:
        for plan, run in zip(stack, scores, strict=True):
            store.save(plan.index, run)
            results[plan.index] = run
        if on_progress is not None:
            for event in pace.finished(stack, scores):
                on_progress(event)

    stacks = _stacks(procedure, todo, inputs)
    tasks = [(procedure, stack, inputs) for stack in stacks]
    if engine is not None and engine.on_dask:
        _on_dask(engine, tasks, finished)
    elif tasks:
        run_in_processes(
            run_group,
            tasks,
            jobs=jobs,
            on_done=lambda i, scores: finished(stacks[i], scores),
            initializer=initializer,
        )
    return results
