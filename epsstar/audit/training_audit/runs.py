"""The training runs of an audit: which canaries each includes, and running them.

One run (Steinke et al. 2023): every canary is included with probability ½ and the procedure
trains once. Many runs (``adversary-instantiation-nasr-2021-excerpt.txt`` §III-C): one canary of
each kind, included in R runs and left out of R others; which runs are which is a seeded
shuffle, so that the runs with the canary are not all first. Each run has its own seed, drawn
from the audit's (:func:`derived_seed`), and is independent of the others, so runs go
through the engines of ``audit-many``: this machine's processes
(:func:`~epsstar.audit.engines.pool.run_in_processes`, ``--jobs``) or one task per run on a Dask
cluster (:func:`~epsstar.audit.engines.dask_engine.run_tasks`). A finished run is kept in the
:class:`~.store.RunStore` as it finishes, so an interrupted audit resumes with the others.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from epsstar.audit.engines.pool import run_in_processes
from epsstar.audit.training_audit.frames import combine, read_frame, write_frame
from epsstar.audit.training_audit.procedure import Procedure, RunRequest, RunScores
from epsstar.audit.training_audit.store import RunStore
from epsstar.audit.training_audit.threat_models import CanaryKind, ThreatModelName
from epsstar.exceptions import InvalidInputError

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.engines.dask_engine import Engine, TaskOutcome

__all__ = ["Arm", "RunInputs", "RunPlan", "RunProgress", "derived_seed", "execute", "run_once"]

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
    """What every run reads: ``--train``, and the canaries' tables (in ``--train``'s format)."""

    train: Path
    canaries: dict[CanaryKind, Path]
    threat_models: tuple[ThreatModelName, ...]


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


def run_once(procedure: Procedure, plan: RunPlan, inputs: RunInputs) -> RunScores:
    """Write run ``plan``'s training table in a scratch folder and have ``procedure`` train on it
    (a module-level function: the task of a worker process or a Dask worker)."""
    train = read_frame(inputs.train, "--train")
    included = []
    for kind, path in inputs.canaries.items():
        bits = np.asarray(plan.included.get(kind, ()), dtype=bool)
        frame = read_frame(path, f"the {kind} canaries")
        included.append(frame.iloc[np.flatnonzero(bits)])
    with tempfile.TemporaryDirectory(prefix="epsstar-run-") as scratch:
        folder = Path(scratch)
        table = write_frame(
            combine(train, included, plan.seed), folder / f"train{inputs.train.suffix.lower()}"
        )
        runs = folder / "run"
        runs.mkdir()
        request = RunRequest(
            index=plan.index,
            seed=plan.seed,
            train=table,
            base_train=inputs.train,
            canaries=dict(inputs.canaries),
            gradient_included=plan.included.get("gradient", ()),
            threat_models=inputs.threat_models,
            scratch=runs,
        )
        return procedure.run(request)


class _Pace:
    """Progress of the runs of this session, for :class:`RunProgress`."""

    def __init__(self, total: int, resumed: int, jobs: int) -> None:
        self.total, self.done, self.jobs = total, resumed, jobs
        self.fresh = 0
        self.start = time.perf_counter()

    def finished(self, plan: RunPlan, scores: RunScores) -> RunProgress:
        self.done += 1
        self.fresh += 1
        elapsed = time.perf_counter() - self.start
        left = elapsed / self.fresh * (self.total - self.done)
        return RunProgress(self.done, self.total, plan.index, plan.arm, scores.seconds, left)


def _on_dask(
    engine: Engine,
    tasks: list[tuple[Procedure, RunPlan, RunInputs]],
    finished: Callable[[RunPlan, RunScores], None],
) -> None:
    """One Dask task per run; the first failure is raised once every task has ended (the
    finished runs are kept)."""
    from epsstar.audit.engines.dask_engine import dask_client, run_tasks

    errors: list[str] = []

    def done(outcome: TaskOutcome[RunScores]) -> None:
        plan = tasks[outcome.index][1]
        if outcome.value is None:
            errors.append(outcome.error or "lost")
        else:
            finished(plan, outcome.value)

    with dask_client(engine) as client:
        run_tasks(client, run_once, tasks, done, name="epsstar-training-run", keep=False)
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
    results = store.finished()
    todo = [plan for plan in plans if plan.index not in results]
    pace = _Pace(len(plans), len(plans) - len(todo), jobs)

    def finished(plan: RunPlan, scores: RunScores) -> None:
        store.save(plan.index, scores)
        results[plan.index] = scores
        if on_progress is not None:
            on_progress(pace.finished(plan, scores))

    tasks = [(procedure, plan, inputs) for plan in todo]
    if engine is not None and engine.name == "dask":
        _on_dask(engine, tasks, finished)
    elif tasks:
        run_in_processes(
            run_once,
            tasks,
            jobs=jobs,
            on_done=lambda i, scores: finished(todo[i], scores),
            initializer=initializer,
        )
    return results
