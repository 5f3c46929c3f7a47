"""Attribute inference readings (``epsstar/statistics/readings/attribute.py``): the ε implied
by the guess's accuracies, checked by hand and against the (ε, δ) inequalities it must
satisfy; its Clopper–Pearson bound against statsmodels; and the leading term of
Corollary 10 of Cherubin et al. 2024, "Closed-Form Bounds for DP-SGD against Record-level
Inference", against ``math.erf``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.readings.attribute import (
    AttributeSecurity,
    attribute_bayes_security,
    attribute_reading,
)


def _clopper_pearson_epsilon(fp: int, n: int, fn: int, p: int, delta: float, level: float) -> float:
    """Nasr et al. eq. 5 with statsmodels' exact (beta) interval at ``level`` two-sided."""
    fp_hi = proportion_confint(fp, n, alpha=1 - level, method="beta")[1]
    fn_hi = proportion_confint(fn, p, alpha=1 - level, method="beta")[1]
    terms = [0.0]
    if 1 - delta - fp_hi > 0:
        terms.append(math.log((1 - delta - fp_hi) / fn_hi))
    if 1 - delta - fn_hi > 0:
        terms.append(math.log((1 - delta - fn_hi) / fp_hi))
    return max(terms)


def test_reading_by_hand() -> None:
    # 80 of 100 members and 50 of 100 non-members guessed right: TPR 0.8, FPR 0.5.
    reading = attribute_reading(80, 100, 50, 100, delta=0.0)
    assert reading.accuracy_members == 0.8
    assert reading.accuracy_nonmembers == 0.5
    assert reading.advantage == pytest.approx(0.3, abs=1e-15)  # 0.8 − 0.5 in floating point
    # max(log(0.8/0.5), log((1 − 0.5)/(1 − 0.8))) = log 2.5
    assert reading.epsilon == pytest.approx(math.log(2.5), rel=1e-14)
    with_delta = attribute_reading(80, 100, 50, 100, delta=0.01)
    expected = max(math.log(0.79 / 0.5), math.log(0.49 / 0.2))
    assert with_delta.epsilon == pytest.approx(expected, rel=1e-14)
    # the first ratio wins when members are guessed right much more often than non-members
    first = attribute_reading(60, 100, 10, 100, delta=0.001)
    assert first.epsilon == pytest.approx(math.log(0.599 / 0.1), rel=1e-14)
    assert (first.members_right, first.members, first.nonmembers_right, first.nonmembers) == (
        60,
        100,
        10,
        100,
    )


def test_reading_at_the_edges() -> None:
    # the non-members never guessed right: ε = ∞ (FPR = 0 with TPR > δ)
    assert attribute_reading(5, 10, 0, 10, delta=0.0).epsilon == math.inf
    # the members always guessed right: 1 − TPR = 0, so the second ratio is ∞
    assert attribute_reading(10, 10, 3, 10, delta=0.0).epsilon == math.inf
    # no member guessed right and every non-member: both numerators ≤ 0 → 0
    assert attribute_reading(0, 10, 10, 10, delta=0.0).epsilon == 0.0
    # non-members guessed better than members: no leak, ε = 0, advantage negative
    worse = attribute_reading(3, 10, 6, 10, delta=0.0)
    assert worse.epsilon == 0.0
    assert worse.advantage == pytest.approx(-0.3, abs=1e-15)
    # TPR exactly δ: the first numerator is 0 (ε = 0 here), not a log of 0
    assert attribute_reading(1, 10, 5, 10, delta=0.1).epsilon == 0.0
    # one record on each side is enough
    assert attribute_reading(1, 1, 0, 1, delta=0.0).advantage == 1.0


@pytest.mark.parametrize(("members", "nonmembers"), [(0, 10), (10, 0), (-1, 5), (0, 0)])
def test_reading_needs_both_sides(members: int, nonmembers: int) -> None:
    with pytest.raises(
        InvalidInputError,
        match=rf"^attribute inference needs members and non-members\. Found {members} and "
        rf"{nonmembers}\.$",
    ):
        attribute_reading(0, members, 0, nonmembers, delta=0.0)


@pytest.mark.parametrize(
    ("right_m", "m", "right_n", "n", "delta", "confidence"),
    [(80, 100, 50, 100, 0.0, 0.95), (900, 1000, 100, 1000, 1e-5, 0.9), (7, 20, 9, 30, 0.01, 0.99)],
)
def test_lower_bound_is_clopper_pearson_of_the_guess(
    right_m: int, m: int, right_n: int, n: int, delta: float, confidence: float
) -> None:
    bound = attribute_reading(
        right_m, m, right_n, n, delta=delta, confidence=confidence
    ).lower_bound
    # the test "member when guessed right": false positives are the non-members guessed right,
    # false negatives the members guessed wrong
    assert (bound.false_positives, bound.negatives) == (right_n, n)
    assert (bound.false_negatives, bound.positives) == (m - right_m, m)
    assert (bound.delta, bound.confidence) == (delta, confidence)
    expected = _clopper_pearson_epsilon(right_n, n, m - right_m, m, delta, confidence)
    # two implementations of the beta quantile: 1e-9 relative is rounding
    assert bound.epsilon == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_default_confidence_is_95_percent() -> None:
    assert attribute_reading(80, 100, 50, 100, delta=0.0).lower_bound.confidence == 0.95


@given(
    st.integers(1, 200).flatmap(lambda m: st.tuples(st.integers(0, m), st.just(m))),
    st.integers(1, 200).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    st.sampled_from([0.0, 1e-5, 0.01, 0.1]),
)
def test_epsilon_is_the_smallest_consistent_with_the_guess(
    members: tuple[int, int], nonmembers: tuple[int, int], delta: float
) -> None:
    # (ε, δ)-DP requires TPR ≤ e^ε FPR + δ and 1 − FPR ≤ e^ε (1 − TPR) + δ; the reading is
    # the smallest ε ≥ 0 for which both hold (one with equality when ε > 0).
    reading = attribute_reading(*members, *nonmembers, delta=delta)
    tpr, fpr = members[0] / members[1], nonmembers[0] / nonmembers[1]
    eps = reading.epsilon
    assert eps >= 0.0
    if math.isinf(eps):
        assert (fpr == 0 and tpr > delta) or (tpr == 1 and 1 - fpr > delta)
        return
    slack = 1e-12  # rounding of exp(log(x/y))·y
    assert tpr <= math.exp(eps) * fpr + delta + slack
    assert 1 - fpr <= math.exp(eps) * (1 - tpr) + delta + slack
    if eps > 0:
        gaps = (math.exp(eps) * fpr + delta - tpr, math.exp(eps) * (1 - tpr) + delta - (1 - fpr))
        assert min(abs(g) for g in gaps) < 1e-9


def test_bayes_security_in_closed_form() -> None:
    # p = 0.01, R = (1, 2, 2) so ‖R‖ = 3, σ = 1, C = 1: argument 0.03 / (2√2)
    result = attribute_bayes_security(0.01, [1.0, 2.0, 2.0], 1.0, 1.0)
    argument = 0.01 * 3 / (2 * math.sqrt(2))
    assert isinstance(result, AttributeSecurity)
    assert result.r_norm == pytest.approx(3.0, rel=1e-15)
    assert result.beta == pytest.approx(math.erfc(argument), rel=1e-14)
    assert result.advantage == pytest.approx(math.erf(argument), rel=1e-14)
    assert result.error_order == pytest.approx(math.sqrt(0.01 * 3) / 1.0, rel=1e-14)
    # σ = 2, C = 0.5, p = 1 (full batch), R_t = 4 over 4 steps: ‖R‖ = 8, argument 8/(2√2)
    full = attribute_bayes_security(1.0, [4.0] * 4, 2.0, 0.5)
    assert full.advantage == pytest.approx(math.erf(8 / (2 * math.sqrt(2))), rel=1e-14)
    assert full.beta == pytest.approx(math.erfc(8 / (2 * math.sqrt(2))), rel=1e-12)
    assert full.error_order == pytest.approx(math.sqrt(4) / 2, rel=1e-15)
    assert full.to_dict() == {
        "bayes_security": full.beta,
        "advantage_bound": full.advantage,
        "error_order": full.error_order,
        "r_norm": 8.0,
        "source": "tracked gradients (Cherubin et al. 2024, Corollary 10)",
    }
    # no distance at all: β* = 1, no advantage
    none = attribute_bayes_security(0.5, np.zeros(3), 1.0, 1.0)
    assert (none.beta, none.advantage) == (1.0, 0.0)


@given(
    st.floats(1e-4, 1.0),
    st.lists(st.floats(0.0, 10.0), min_size=1, max_size=20),
    st.floats(0.1, 20.0),
    st.floats(0.1, 10.0),
)
def test_bayes_security_complements_the_advantage(
    p: float, r: list[float], sigma: float, c: float
) -> None:
    result = attribute_bayes_security(p, r, sigma, c)
    assert result.beta + result.advantage == pytest.approx(1.0, abs=1e-15)
    assert 0.0 <= result.advantage <= 1.0
    # doubling σ·C halves the erf argument: the advantage cannot grow
    halved = attribute_bayes_security(p, r, 2 * sigma, c)
    assert halved.advantage <= result.advantage


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0.0, [1.0], 1.0, 1.0), r"^sampling_rate must be in \(0, 1\]\. Found 0\.0\.$"),
        ((1.5, [1.0], 1.0, 1.0), r"^sampling_rate must be in"),
        ((0.1, [], 1.0, 1.0), r"^R must hold one finite distance ≥ 0 per step\. Found 0 values\.$"),
        ((0.1, [[1.0, 2.0]], 1.0, 1.0), r"Found 2 values\.$"),
        ((0.1, [1.0, math.nan], 1.0, 1.0), r"Found 2 values\.$"),
        ((0.1, [1.0, math.inf], 1.0, 1.0), r"^R must hold"),
        ((0.1, [1.0, -0.1], 1.0, 1.0), r"^R must hold"),
        ((0.1, [1.0], 0.0, 1.0), r"^noise_multiplier must be in \(0, inf\)\. Found 0\.0\.$"),
        ((0.1, [1.0], math.inf, 1.0), r"^noise_multiplier must be in"),
        ((0.1, [1.0], 1.0, 0.0), r"^clip_norm must be in \(0, inf\)\. Found 0\.0\.$"),
        ((0.1, [1.0], 1.0, -1.0), r"^clip_norm must be in"),
    ],
)
def test_bayes_security_refuses_bad_inputs(args: tuple[Any, ...], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        attribute_bayes_security(*args)
