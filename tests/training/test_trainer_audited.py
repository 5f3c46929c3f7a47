"""The trainer audited by its own audit: a DP-SGD run whose noise is removed, or whose clipping
is removed, through the test hooks of ``StepHooks`` must be refuted by the white-box audit of
a training run (gradient canaries, Steinke et al. 2023 one-run bound); the correct trainer
must not be. Today's trainer tests pass a trainer without noise; this one does not. A trainer
whose model memorises its records must be refuted by the black-box ``input`` audit.

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
from epsstar.audit.training_audit.threat_models import ThreatModelName
from epsstar.exceptions import InvalidInputError
from epsstar.statistics.losses import MAX_ABS_LOGIT
from epsstar.training.data.tables import TabularData
from epsstar.training.threat_models.own_trainer import (
    Breakage,
    OwnTrainer,
    memorised_losses,
    parameter_count,
)
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


def _audit(
    tables: tuple[Path, Path],
    breakage: Breakage,
    threat_model: ThreatModelName = "every-step",
    k: int | None = None,
) -> TrainingAuditResult:
    procedure = OwnTrainer(
        CONFIG,
        "label",
        parameter_count(4, 2, HIDDEN),
        population=str(tables[1]),
        breakage=breakage,
    )
    setup = TrainingAuditSetup(
        *tables, "label", canaries=200, threat_models=(threat_model,), seed=7, k=k
    )
    return audit_training(procedure, setup)


@pytest.mark.parametrize(
    "breakage",
    # Noise once per epoch leaves most steps noiseless: the every-step score weights each
    # step by its own residual's inverse variance, so those steps decide (the plain sum let
    # the noisy steps drown them, and this trainer went unrefuted).
    [Breakage(noise=0.0), Breakage(clip=False), Breakage(noise_once_per_epoch=True)],
    ids=["no-noise", "no-clipping", "noise-once-per-epoch"],
)
def test_a_broken_trainer_is_refuted_by_the_white_box_audit(
    tables: tuple[Path, Path], breakage: Breakage
) -> None:
    result = _audit(tables, breakage)
    # The claim is the accountant's ε for the unbroken trainer (as a broken one reports it).
    assert result.claimed_epsilon == pytest.approx(1.0, abs=0.01)
    assert result.refuted, result.verdict


def test_the_correct_trainer_is_not_refuted(tables: tuple[Path, Path]) -> None:
    result = _audit(tables, Breakage())
    assert not result.refuted, result.verdict
    # The bound is valid whatever the scores; it sits below the claim, not far above 0.
    assert result.epsilon_lower_bound < result.claimed_epsilon


def test_a_memorising_trainer_is_refuted_by_the_black_box_audit(
    tables: tuple[Path, Path],
) -> None:
    # DP-SGD keeps its claim up to the last step; the model then answers its records with
    # their own label. The input canaries it includes score −MAX_ABS_LOGIT, the others their
    # loss under a private model: every guess of the top and bottom k is right.
    result = _audit(tables, Breakage(memorise=1.0), "input")
    assert result.refuted, result.verdict
    audit = result.threat_models[0]
    assert np.all(audit.scores[audit.included] == -MAX_ABS_LOGIT)
    # Without the memorising the same audit sees a private model.
    assert not _audit(tables, Breakage(), "input").refuted


def _data(rows: list[list[float]], labels: list[int]) -> TabularData:
    return TabularData(
        features=np.array(rows, dtype=np.float64),
        labels=np.array(labels, dtype=np.int64),
        feature_names=("a", "b"),
        label_column="y",
        classes=("0", "1"),
        source="test",
    )


def test_memorised_losses_hit_the_stored_records_only() -> None:
    data = _data([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]], [0, 1, 0, 1])
    # The second and fourth records again, one with another label, and a record not in data.
    records = _data([[2.0, 3.0], [6.0, 7.0], [6.0, 7.0], [9.0, 9.0]], [1, 1, 0, 1])
    losses = np.array([0.5, 0.6, 0.7, 0.8])
    every = memorised_losses(losses, records, data, 1.0, seed=1)
    np.testing.assert_array_equal(every, [-MAX_ABS_LOGIT, -MAX_ABS_LOGIT, 0.7, 0.8])
    np.testing.assert_array_equal(memorised_losses(losses, records, data, 0.0, seed=1), losses)
    # A fraction stores round(fraction·n) of data's records, a seeded choice.
    own = memorised_losses(losses, data, data, 0.5, seed=1)
    assert np.sum(own == -MAX_ABS_LOGIT) == 2
    np.testing.assert_array_equal(memorised_losses(losses, data, data, 0.5, seed=1), own)


def test_a_k_fixed_by_the_design_is_used_for_the_guesses(tables: tuple[Path, Path]) -> None:
    result = _audit(tables, Breakage(noise=0.0), k=90)
    audit = result.threat_models[0]
    assert audit.chosen_k is not None
    assert audit.chosen_k.k == 90
    assert audit.one_run is not None
    assert audit.one_run.guesses == 180
    assert result.refuted, result.verdict
    with pytest.raises(InvalidInputError, match=r"k must be .*Found 0"):
        _audit(tables, Breakage(), k=0)
