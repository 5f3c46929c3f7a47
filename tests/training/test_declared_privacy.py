"""The trainer's files declare how the model was trained; the loaders read it, and the audit
shows a DP guarantee beside Epsilon* (an Epsilon* above it is estimation error)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from epsstar.audit.attacks.from_losses import audit_losses
from epsstar.audit.model.declared_privacy import (
    DeclaredPrivacy,
    privacy_from_text,
    privacy_to_text,
)
from epsstar.audit.model.plugins import get_loader
from epsstar.audit.options import AuditOptions
from epsstar.cli.commands.audit import format_summary
from epsstar.exceptions import InputFileError
from epsstar.statistics.utility import Utility
from epsstar.training.data.tables import TabularData
from epsstar.training.runs.export import write_model_dir
from epsstar.training.trainer import TrainingConfig, train
from tests.conftest import made_up_provenance

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.mark.parametrize(
    "declared",
    [
        DeclaredPrivacy(private=False),
        DeclaredPrivacy(private=True, epsilon=0.9988, delta=2.96e-6, accountant="pld"),
    ],
)
def test_a_declaration_survives_its_text(declared: DeclaredPrivacy) -> None:
    assert privacy_from_text(privacy_to_text(declared), "m.onnx") == declared
    assert privacy_from_text("", "m.onnx") is None


@pytest.mark.parametrize(
    "text",
    [
        "[1, 2]",
        "not json",
        '{"private": "yes"}',
        '{"private": true, "epsilon": -1, "delta": 1e-5}',
        '{"private": true, "epsilon": 1.0, "delta": 1.5}',
        '{"private": true, "epsilon": NaN, "delta": 1e-5}',
    ],
)
def test_a_malformed_declaration_names_the_file(text: str) -> None:
    with pytest.raises(InputFileError, match=r"epsstar\.privacy.*m\.onnx"):
        privacy_from_text(text, "m.onnx")


@pytest.mark.parametrize("private", [True, False])
def test_both_exports_declare_how_the_model_was_trained(
    tmp_path: Path, binary_table: TabularData, private: bool
) -> None:
    config = TrainingConfig(standardise_on="data", epochs=1, hidden=(8,))
    if private:
        config = dataclasses.replace(config, target_epsilon=3.0)
    trained = train(binary_table, config)
    write_model_dir(tmp_path, trained.model, trained.result)
    for loader, name in (("onnx", "model.onnx"), ("torchscript", "model.pt")):
        declared = get_loader(loader)[0].load(tmp_path / name).declared_privacy
        assert declared is not None
        assert declared.private is private
        if private:
            privacy = trained.result.privacy
            assert privacy is not None
            assert (declared.epsilon, declared.delta) == (privacy.epsilon, privacy.delta)
            assert declared.accountant == "pld"
        else:
            assert declared.epsilon is None


def _result(declared: DeclaredPrivacy | None, delta: float = 1e-4) -> object:
    rng = np.random.default_rng(0)
    train_losses, population_losses = rng.normal(0, 1, 2000), rng.normal(1.0, 1, 2000)
    utility = {"population": Utility(n=2000, accuracy=0.5, auroc=None)}
    result = audit_losses(
        train_losses, population_losses, utility=utility, options=AuditOptions(delta=delta)
    )
    provenance = made_up_provenance(2000, 2000)
    return dataclasses.replace(result, declared_privacy=declared, provenance=provenance)


def test_an_estimate_above_the_declared_epsilon_is_called_estimation_error() -> None:
    below = _result(DeclaredPrivacy(True, epsilon=50.0, delta=1e-5, accountant="pld"))
    above = _result(DeclaredPrivacy(True, epsilon=0.01, delta=1e-5, accountant="pld"))
    uncovered = _result(DeclaredPrivacy(True, epsilon=0.01, delta=1e-3, accountant="pld"))
    assert not below.above_declared_epsilon  # type: ignore[attr-defined]
    assert above.above_declared_epsilon  # type: ignore[attr-defined]
    # An (ε, δ)-DP guarantee says nothing about Epsilon* at a smaller δ.
    assert not uncovered.above_declared_epsilon  # type: ignore[attr-defined]
    assert above.to_dict()["declared_privacy"]["epsilon_star_above_it"] is True  # type: ignore[attr-defined]
    assert "estimation error, not a finding" in format_summary(above)  # type: ignore[arg-type]
    assert "within it" in format_summary(below)  # type: ignore[arg-type]
    assert "does not bound" in format_summary(uncovered)  # type: ignore[arg-type]
    plain = _result(DeclaredPrivacy(private=False))
    assert "trained without differential privacy" in format_summary(plain)  # type: ignore[arg-type]
    assert _result(None).to_dict()["declared_privacy"] is None  # type: ignore[attr-defined]
