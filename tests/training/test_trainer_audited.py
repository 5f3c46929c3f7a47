"""The trainer audited by its own audit: a DP-SGD run whose noise is removed, or whose clipping
is removed, through the test hooks of ``StepHooks`` must be refuted by the white-box audit of
a training run (gradient canaries, Steinke et al. 2023 one-run bound); the correct trainer
must not be. Today's trainer tests pass a trainer without noise; this one does not.

Small on purpose: 300 records, one hidden layer of 64 (385 parameters, room for the 200
gradient canaries), 2 epochs; the accountant's ε ≈ 1.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from epsstar.audit.training_audit.audit import TrainingAuditSetup, audit_training
from epsstar.audit.training_audit.result import TrainingAuditResult
from epsstar.training.threat_models.own_trainer import Breakage, OwnTrainer, parameter_count
from epsstar.training.trainer import TrainingConfig

HIDDEN = (64,)
CONFIG = TrainingConfig(
    epochs=2, batch_size=64, hidden=HIDDEN, lr=0.5, clip=1.0, target_epsilon=1.0
)


def _table(rng: np.random.Generator, n: int) -> pd.DataFrame:
    x = rng.normal(size=(n, 4))
    y = (x @ np.array([1.0, -1.0, 0.5, 0.0]) + rng.normal(size=n) > 0).astype(int)
    return pd.DataFrame({**{f"f{j}": x[:, j] for j in range(4)}, "label": y})


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("trainer-audited")
    rng = np.random.default_rng(3)
    train, population = folder / "train.csv", folder / "population.csv"
    _table(rng, 300).to_csv(train, index=False)
    _table(rng, 600).to_csv(population, index=False)
    return train, population


def _audit(tables: tuple[Path, Path], breakage: Breakage) -> TrainingAuditResult:
    procedure = OwnTrainer(CONFIG, "label", parameter_count(4, 2, HIDDEN), breakage=breakage)
    setup = TrainingAuditSetup(
        *tables, "label", canaries=200, threat_models=("every-step",), seed=7
    )
    return audit_training(procedure, setup)


@pytest.mark.parametrize(
    "breakage", [Breakage(noise=0.0), Breakage(clip=False)], ids=["no-noise", "no-clipping"]
)
def test_a_broken_trainer_is_refuted_by_the_white_box_audit(
    tables: tuple[Path, Path], breakage: Breakage
) -> None:
    result = _audit(tables, breakage)
    # The claim is the accountant's ε for the unbroken trainer (as a broken one reports it).
    assert result.claimed_epsilon == pytest.approx(1.0, abs=0.01)
    assert result.refuted, result.verdict()


def test_the_correct_trainer_is_not_refuted(tables: tuple[Path, Path]) -> None:
    result = _audit(tables, Breakage())
    assert not result.refuted, result.verdict()
    # The bound is valid whatever the scores; it sits below the claim, not far above 0.
    assert result.epsilon_lower_bound < result.claimed_epsilon
