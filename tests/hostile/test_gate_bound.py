"""An Epsilon* estimate below its own held-out lower bound must not pass a release gate.

The Clopper–Pearson bound holds for any losses, so an estimate below it understates the
leak (the empirical estimator drops rates below δ; losses on two values leave only such
rates). The gate then compares the bound (``epsstar.statistics.bounds.gate``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from epsstar.audit.attacks.from_losses import audit_losses
from epsstar.audit.options import AuditOptions
from epsstar.audit.output.result import AuditResult
from epsstar.cli.commands.audit import UNDERSTATES, format_summary
from epsstar.reports import render
from epsstar.statistics.bounds.from_counts import EpsilonLowerBound
from epsstar.statistics.bounds.gate import gate_statistic
from epsstar.statistics.bounds.leak_test import LeakTest
from epsstar.statistics.utility import Utility
from tests.conftest import made_up_provenance


def _bound(epsilon: float) -> EpsilonLowerBound:
    return EpsilonLowerBound(epsilon, 0.01, 0.5, 1e-3, 0.95, 0, 100, 50, 100)


def _leak(p_value: float) -> LeakTest:
    return LeakTest(p_value, 0.0, "members_lower", 50, 100, 0, 100)


values = st.floats(min_value=0, max_value=50, allow_nan=False)


@given(estimate=values, bound=values, p_value=st.floats(min_value=0, max_value=1))
def test_the_gate_statistic_is_never_below_a_counted_bound(
    estimate: float, bound: float, p_value: float
) -> None:
    for rule in ("estimate", "lower-bound", "significant"):
        statistic = gate_statistic(rule, estimate, _bound(bound), _leak(p_value))
        if rule == "significant" and p_value >= statistic.level:
            # No leak found: 0, which keeps the rule's false-alarm rate at its level.
            assert statistic.value == 0.0
            assert not statistic.raised_to_lower_bound
            continue
        assert statistic.value >= bound
        assert statistic.raised_to_lower_bound == (rule != "lower-bound" and bound > estimate)
        assert ("raised_to_lower_bound" in statistic.to_dict()) == statistic.raised_to_lower_bound


def test_losses_on_two_values_fail_a_gate_the_estimate_alone_would_pass() -> None:
    # Population losses on two values: the estimate (3.5) drops the rate below δ that the
    # held-out bound (4.6) counts; a limit between the two must fail.
    train = np.random.default_rng(0).normal(0.0, 1.0, 600)
    population = np.where(np.arange(3000) % 2 == 0, -0.5, 2.0)
    result = audit_losses(
        train, population, utility={}, options=AuditOptions(method="empirical", max_epsilon=4.0)
    )
    assert result.epsilon.epsilon < 4.0 < result.lower_bound.epsilon
    assert result.gate is not None
    assert result.gate.raised_to_lower_bound
    assert result.gate.value == result.lower_bound.epsilon
    assert result.passed is False


def _two_value_result(max_epsilon: float | None) -> AuditResult:
    """The losses above: a real audit whose estimate lies below its held-out lower bound."""
    train = np.random.default_rng(0).normal(0.0, 1.0, 600)
    population = np.where(np.arange(3000) % 2 == 0, -0.5, 2.0)
    utility = {"population": Utility(n=3000, accuracy=0.5, auroc=None)}
    options = AuditOptions(method="empirical", max_epsilon=max_epsilon)
    result = audit_losses(train, population, utility=utility, options=options)
    return dataclasses.replace(result, provenance=made_up_provenance(600, 3000))


def test_a_lower_bound_above_the_headline_says_why_in_its_line(tmp_path: Path) -> None:
    # Two numbers side by side: the bound above the estimate must say in its own line why,
    # once (by the gate's line when a limit is set, else by the bound's line), in the text
    # summary and in the HTML report.
    plain, gated = _two_value_result(None), _two_value_result(4.0)
    assert plain.epsilon_star < plain.lower_bound.epsilon
    text = format_summary(plain)
    (bound_line,) = [line for line in text.splitlines() if line.startswith("  lower bound")]
    assert UNDERSTATES in bound_line
    assert format_summary(gated).count(UNDERSTATES) == 1
    html = render(plain, tmp_path / "report.html", ks_components=()).read_text("utf-8")
    assert html.count("above Epsilon*: the estimate lies below its own lower bound") == 2
    assert 'id="bound-above"' in html  # the verdict's card, beside the headline's
