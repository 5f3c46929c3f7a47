"""An attack whose scores cannot be audited (every record scores the same) says which attack,
and which options, made them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from epsstar.audit.attacks import scoring
from epsstar.audit.attacks.attack import Attack, AttackParameters, Scores
from epsstar.audit.attacks.from_losses import audit_losses
from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.audit.attacks.registry import attack as registered
from epsstar.audit.options import AuditOptions
from epsstar.audit.output.attack_result import AttackResult
from epsstar.exceptions import InvalidInputError

LOSS = registered("loss")


def _constant(inputs: AttackInputs, parameters: AttackParameters, seed: int) -> Scores:
    # RMIA's scores with a γ no likelihood ratio reaches: every score the same.
    return Scores(np.ones(200), np.ones(200), {"gamma": parameters.rmia_gamma})


def _audited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *attacks: str
) -> tuple[AttackResult, ...]:
    reference = tmp_path / "ref.onnx"
    reference.write_bytes(b"unused")
    settings = scoring.AttackSettings(attacks, (reference,), rmia_gamma=1e6)
    constant = Attack("rmia", frozenset(), _constant)
    monkeypatch.setattr(scoring, "attack", lambda name: constant if name == "rmia" else LOSS)
    rng = np.random.default_rng(0)
    base = audit_losses(rng.normal(size=200), rng.normal(size=200), utility={})
    inputs = AttackInputs.__new__(AttackInputs)
    return scoring.attack_results(settings, base, inputs, AuditOptions())


REASON = (
    "every record scores the same (no record's ratio reaches the factor gamma?) "
    "(with --rmia-gamma 1e+06 and --rmia-a 0.3)"
)


def test_equal_scores_name_the_attack_and_its_gamma(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loss, rmia = _audited(tmp_path, monkeypatch, "loss", "rmia")
    assert loss.informative
    assert rmia.uninformative_reason == REASON
    assert rmia.to_dict()["reason"] == REASON


def test_only_equal_scores_are_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(InvalidInputError) as raised:
        _audited(tmp_path, monkeypatch, "rmia")
    message = str(raised.value)
    assert message.startswith("every attack asked for is uninformative, so the audit measured")
    assert message.endswith(f"Found rmia: {REASON}.")
    assert "\n" not in message
