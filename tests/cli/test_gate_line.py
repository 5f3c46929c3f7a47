"""The gate line beside the headline: a headline above 0 never stands beside "finds no
leak" without saying why in the same line."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from epsstar.audit.attacks.from_losses import audit_losses
from epsstar.audit.options import AuditOptions
from epsstar.cli.commands.audit import _gate_lines
from epsstar.statistics.utility import Utility

UTILITY = {
    "train": Utility(n=2000, accuracy=0.8, auroc=None),
    "population": Utility(n=2000, accuracy=0.8, auroc=None),
}


def test_a_gate_over_several_attacks_says_why_it_reads_no_leak_beside_a_headline() -> None:
    # A weak leak whose held-out test gives p = 0.047: the headline (tested at 0.05) reads
    # it; a gate over two attacks reads each test at 0.025 and finds none.
    rng = np.random.default_rng(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = audit_losses(
            rng.normal(0.0, 1.0, 2000),
            rng.normal(0.08, 1.0, 2000),
            utility=UTILITY,
            options=AuditOptions(max_epsilon=5.0),
        )
    assert result.gate is not None
    assert 0.025 < result.gate.leak_p_value < 0.05
    assert result.epsilon_star > 0
    (line,) = _gate_lines(result)
    assert "finds a leak at level 0.05" in line
    strict = dataclasses.replace(
        result, gate=dataclasses.replace(result.gate, level=0.025, n_tests=2, test="loss")
    )
    (line,) = _gate_lines(strict)
    assert "finds no leak at level 0.025" in line
    assert "the headline's own leak test (p = 0.0471) finds a leak at level 0.05" in line
