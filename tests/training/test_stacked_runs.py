"""The many-run training audit with its runs trained together (``stacked_runs``).

A stacked audit of epsstar's own DP-SGD trainer must give the scores of the same audit run one
run at a time (each run's model is the one the run alone gives, up to float32 summation order),
and so the same bounds when the scores come in the same order; a resumed stacked audit must
train only the runs it lacks; a white-box or broken trainer's runs must not be stacked.

Small on purpose: 300 records, one hidden layer of 32, 2 epochs, 16 runs with the canary and 16
without (the fewest that could refute the claim with the ``gdp`` bound).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from epsstar.audit.training_audit.audit import TrainingAuditSetup, audit_training
from epsstar.audit.training_audit.result import TrainingAuditResult
from epsstar.audit.training_audit.threat_models import ThreatModelName
from epsstar.training import batched
from epsstar.training.data.tables import TabularData
from epsstar.training.threat_models import stacked_runs
from epsstar.training.threat_models.own_trainer import Breakage, OwnTrainer, parameter_count
from epsstar.training.trainer import TrainedModel, TrainingConfig

HIDDEN = (32,)
CONFIG = TrainingConfig(
    epochs=2, batch_size=64, hidden=HIDDEN, lr=0.5, clip=1.0, target_epsilon=2.0
)
RUNS = 16


def _table(rng: np.random.Generator, n: int) -> pd.DataFrame:
    x = rng.normal(size=(n, 4))
    y = (x @ np.array([1.0, -1.0, 0.5, 0.0]) + rng.normal(size=n) > 0).astype(int)
    return pd.DataFrame({**{f"f{j}": x[:, j] for j in range(4)}, "label": y})


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("stacked-runs")
    rng = np.random.default_rng(5)
    train, population = folder / "train.csv", folder / "population.csv"
    _table(rng, 300).to_csv(train, index=False)
    _table(rng, 600).to_csv(population, index=False)
    return train, population


def _trainer(population: Path, stack: int, breakage: Breakage | None = None) -> OwnTrainer:
    return OwnTrainer(
        CONFIG,
        "label",
        parameter_count(4, 2, HIDDEN),
        population=str(population),
        breakage=breakage or Breakage(),
        stack=stack,
    )


def _audit(
    tables: tuple[Path, Path], stack: int, work: Path, breakage: Breakage | None = None
) -> TrainingAuditResult:
    setup = TrainingAuditSetup(
        *tables,
        "label",
        runs=RUNS,
        threat_models=("input",),
        bound="gdp",
        seed=11,
        work=work,
    )
    return audit_training(_trainer(tables[1], stack, breakage), setup)


def _scores(work: Path) -> dict[str, float]:
    """Each finished run's score of the canary, by its file."""
    return {
        path.name: json.loads(path.read_text())["scores"]["input"][0]
        for path in sorted(work.glob("run-*.json"))
    }


class _Calls:
    """The seeds of every model :func:`train_many` was asked for, call by call."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seeds: list[list[int]] = []
        original = batched.train_many

        def recorded(
            data: TabularData, configs: Sequence[TrainingConfig], **kwargs: Any
        ) -> list[TrainedModel]:
            self.seeds.append([config.seed for config in configs])
            return original(data, configs, **kwargs)

        monkeypatch.setattr(stacked_runs, "train_many", recorded)


@pytest.fixture(scope="module")
def one_by_one(tables: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("one-by-one")
    _audit(tables, 1, work)
    return work


def test_a_stacked_audit_gives_the_scores_and_bounds_of_runs_one_at_a_time(
    tables: tuple[Path, Path], one_by_one: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _Calls(monkeypatch)
    stacked = _audit(tables, RUNS, tmp_path)
    # Two stacks of 16 runs each, every run in one.
    assert [len(seeds) for seeds in calls.seeds] == [RUNS, RUNS]
    alone, together = _scores(one_by_one), _scores(tmp_path)
    assert list(alone) == list(together)
    assert len(alone) == 2 * RUNS
    a = np.array(list(alone.values()))
    b = np.array(list(together.values()))
    # The models differ by float32 summation order inside the batched products: 9.5e-7 the
    # largest difference of a canary's logit loss measured; 1e-5 catches a run stepped with
    # another run's seed or rows, which moves the losses by more than 1e-3.
    np.testing.assert_allclose(b, a, rtol=0, atol=1e-5)
    assert not np.array_equal(a, np.zeros_like(a))
    reference = _audit(tables, 1, one_by_one)  # resumed: every run read back, nothing trained
    if np.array_equal(np.argsort(a, kind="stable"), np.argsort(b, kind="stable")):
        left, right = reference.threat_models[0], stacked.threat_models[0]
        assert left.many_runs is not None
        assert right.many_runs is not None
        # the threshold is a score: equal up to the scores' own float32 difference
        assert left.many_runs.threshold == pytest.approx(right.many_runs.threshold, abs=1e-5)
        same_threshold = replace(right.many_runs, threshold=left.many_runs.threshold)
        assert left.many_runs == same_threshold
        assert left.epsilon_lower_gdp == right.epsilon_lower_gdp


def test_a_resumed_stacked_audit_trains_only_the_runs_it_lacks(
    tables: tuple[Path, Path], one_by_one: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for path in one_by_one.iterdir():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    lost = sorted(tmp_path.glob("run-*.json"))[1::3]  # runs 2, 5, 8, ...: as if never finished
    for path in lost:
        path.unlink()
    calls = _Calls(monkeypatch)
    _audit(tables, RUNS, tmp_path)
    assert len(calls.seeds) == 1
    assert len(calls.seeds[0]) == len(lost)
    assert sorted(p.name for p in tmp_path.glob("run-*.json")) == sorted(_scores(one_by_one))


@pytest.mark.parametrize(
    ("breakage", "threat_model"),
    [(Breakage(noise=0.0), "input"), (Breakage(), "every-step")],
    ids=["broken-noise", "white-box"],
)
def test_runs_that_need_the_one_run_hooks_are_not_stacked(
    breakage: Breakage, threat_model: ThreatModelName
) -> None:
    trainer = _trainer(Path("population.csv"), 8, breakage)
    assert trainer.stack_size((threat_model,)) == 1
    assert replace(trainer, breakage=Breakage()).stack_size(("input",)) == 8
