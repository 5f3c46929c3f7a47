"""An attack whose scores cannot be audited says which attack, and which options, made them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from epsstar.audit.attacks import scoring
from epsstar.audit.attacks.attack import Attack, AttackParameters, Scores
from epsstar.audit.attacks.from_losses import audit_losses
from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.audit.options import AuditOptions
from epsstar.exceptions import DegenerateDataError


def _constant(inputs: AttackInputs, parameters: AttackParameters, seed: int) -> Scores:
    # RMIA's scores with a γ no likelihood ratio reaches: every score the same.
    return Scores(np.ones(200), np.ones(200), {"gamma": parameters.rmia_gamma})


def test_equal_scores_name_the_attack_and_its_gamma(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = tmp_path / "ref.onnx"
    reference.write_bytes(b"unused")
    settings = scoring.AttackSettings(("rmia",), (reference,), rmia_gamma=1e6)
    monkeypatch.setattr(scoring, "attack", lambda name: Attack(name, frozenset(), _constant))
    rng = np.random.default_rng(0)
    base = audit_losses(rng.normal(size=200), rng.normal(size=200), utility={})
    inputs = AttackInputs.__new__(AttackInputs)
    with pytest.raises(DegenerateDataError) as raised:
        scoring.attack_results(settings, base, inputs, AuditOptions())
    message = str(raised.value)
    assert message.startswith("the rmia attack's scores (with --rmia-gamma 1e+06 and --rmia-a")
    assert "all losses are equal" in message
    assert message.endswith("Found every loss = 1.0.")
