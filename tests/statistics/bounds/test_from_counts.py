"""epsstar.statistics.bounds.from_counts: Clopper–Pearson bounds, ε lower bound, pooling over
models."""

from __future__ import annotations

import math
import re

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from epsstar.exceptions import InsufficientDataError, InvalidInputError
from epsstar.statistics.bounds.from_counts import (
    EpsilonLowerBound,
    clopper_pearson_upper,
    epsilon_lower_bound,
    mechanism_epsilon,
)

confidences = st.floats(min_value=0.5, max_value=0.999)


@st.composite
def count_and_total(draw: st.DrawFn, max_n: int = 5000) -> tuple[int, int]:
    n = draw(st.integers(min_value=1, max_value=max_n))
    return draw(st.integers(min_value=0, max_value=n)), n


# --- Clopper–Pearson --------------------------------------------------------------------------


@settings(deadline=None)  # the first call imports statsmodels
@given(count_and_total(), confidences)
def test_clopper_pearson_matches_beta_quantile(xn: tuple[int, int], confidence: float) -> None:
    x, n = xn
    expected = 1.0 if x == n else stats.beta.ppf((1 + confidence) / 2, x + 1, n - x)
    assert clopper_pearson_upper(x, n, confidence) == pytest.approx(expected, rel=1e-9, abs=1e-15)


@settings(deadline=None)
@given(count_and_total(max_n=2000), confidences)
def test_clopper_pearson_is_the_binomial_tail_inversion(
    xn: tuple[int, int], confidence: float
) -> None:
    # Defining property: at the upper bound u, P(Binomial(n, u) ≤ x) = (1 − c)/2.
    x, n = xn
    upper = clopper_pearson_upper(x, n, confidence)
    if x == n:
        assert upper == 1.0
    else:
        tail = stats.binom.cdf(x, n, upper)
        assert tail == pytest.approx((1 - confidence) / 2, rel=1e-6)


def test_clopper_pearson_zero_count_closed_form() -> None:
    # With no success the upper bound is 1 − ((1 − c)/2)^(1/n).
    mpmath.mp.dps = 50
    for n in (1, 10, 1000, 100_000):
        exact = 1 - mpmath.power(mpmath.mpf("0.025"), mpmath.mpf(1) / n)
        assert clopper_pearson_upper(0, n, 0.95) == pytest.approx(float(exact), rel=1e-11)


# --- ε lower bound ----------------------------------------------------------------------------


def test_golden_nasr_5_60() -> None:
    result = epsilon_lower_bound(0, 1000, 0, 1000, delta=0.0, confidence=0.95)
    mpmath.mp.dps = 50
    upper = 1 - mpmath.power(mpmath.mpf("0.025"), mpmath.mpf(1) / 1000)
    exact = mpmath.log((1 - upper) / upper)
    assert result.epsilon == pytest.approx(float(exact), rel=1e-11)
    assert round(result.epsilon, 2) == 5.60
    assert result.fpr_upper == result.fnr_upper == pytest.approx(float(upper), rel=1e-11)


def test_result_fields_and_to_dict() -> None:
    result = epsilon_lower_bound(3, 500, 7, 400, delta=1e-5, confidence=0.9)
    assert isinstance(result, EpsilonLowerBound)
    d = result.to_dict()
    assert d == {
        "epsilon": result.epsilon,
        "fpr_upper": result.fpr_upper,
        "fnr_upper": result.fnr_upper,
        "delta": 1e-5,
        "confidence": 0.9,
        "false_positives": 3,
        "negatives": 500,
        "false_negatives": 7,
        "positives": 400,
        "threshold": None,
        "direction": None,
    }
    with pytest.raises(AttributeError):
        result.epsilon = 1.0  # type: ignore[misc]


def test_bound_matches_an_independent_computation() -> None:
    fp, neg, fn, pos, delta, c = 12, 2000, 150, 1500, 1e-5, 0.99
    fp_up = stats.beta.isf((1 - c) / 2, fp + 1, neg - fp)
    fn_up = stats.beta.isf((1 - c) / 2, fn + 1, pos - fn)
    expected = max(
        0.0, math.log((1 - delta - fn_up) / fp_up), math.log((1 - delta - fp_up) / fn_up)
    )
    result = epsilon_lower_bound(fp, neg, fn, pos, delta=delta, confidence=c)
    assert result.epsilon == pytest.approx(expected, rel=1e-9)


def test_chance_level_attack_gives_zero() -> None:
    assert epsilon_lower_bound(500, 1000, 500, 1000).epsilon == 0.0
    assert epsilon_lower_bound(1000, 1000, 1000, 1000).epsilon == 0.0


@settings(max_examples=60, deadline=None)
@given(
    count_and_total(max_n=3000),
    count_and_total(max_n=3000),
    st.sampled_from([0.0, 1e-6, 1e-3, 0.1]),
    st.sampled_from([0.9, 0.95, 0.99]),
)
def test_more_errors_give_a_lower_bound(
    fp_neg: tuple[int, int], fn_pos: tuple[int, int], delta: float, c: float
) -> None:
    fp, neg = fp_neg
    fn, pos = fn_pos
    base = epsilon_lower_bound(fp, neg, fn, pos, delta=delta, confidence=c).epsilon
    assert base >= 0.0
    if fp < neg:
        assert epsilon_lower_bound(fp + 1, neg, fn, pos, delta=delta, confidence=c).epsilon <= base
    if fn < pos:
        assert epsilon_lower_bound(fp, neg, fn + 1, pos, delta=delta, confidence=c).epsilon <= base
    # Higher confidence and larger δ can only lower the bound.
    assert epsilon_lower_bound(fp, neg, fn, pos, delta=delta, confidence=0.999).epsilon <= base
    assert epsilon_lower_bound(fp, neg, fn, pos, delta=0.2, confidence=c).epsilon <= base


def test_more_trials_without_errors_raise_the_bound() -> None:
    values = [epsilon_lower_bound(0, n, 0, n).epsilon for n in (10, 100, 1000, 10_000)]
    assert values == sorted(values)
    assert values[0] < values[-1]


@pytest.mark.parametrize(
    ("args", "kwargs", "shown"),
    [
        ((-1, 10, 0, 10), {}, "-1"),
        ((11, 10, 0, 10), {}, "11"),
        ((0, 10, 12, 10), {}, "12"),
        ((0, 0, 0, 10), {}, "0"),
        ((0, 10, 0, -5), {}, "-5"),
        ((1.5, 10, 0, 10), {}, "1.5"),
        ((True, 10, 0, 10), {}, "True"),
        ((0, "10", 0, 10), {}, "'10'"),
        ((0, 10, 0, 10), {"delta": -0.1}, "-0.1"),
        ((0, 10, 0, 10), {"delta": 0.7}, "0.7"),
        ((0, 10, 0, 10), {"delta": math.nan}, "nan"),
        ((0, 10, 0, 10), {"confidence": 1.0}, "1.0"),
        ((0, 10, 0, 10), {"confidence": 0}, "0"),
    ],
)
def test_bad_arguments_raise(
    args: tuple[object, ...], kwargs: dict[str, object], shown: str
) -> None:
    with pytest.raises(InvalidInputError) as info:
        epsilon_lower_bound(*args, **kwargs)  # type: ignore[arg-type]
    message = str(info.value)
    assert message.endswith(f"Found {shown}.")
    assert "\n" not in message


@pytest.mark.parametrize(
    ("args", "shown"),
    [((-1, 10, 0.95), "-1"), ((11, 10, 0.95), "11"), ((0, 0, 0.95), "0"), ((1, 10, 1.5), "1.5")],
)
def test_clopper_pearson_bad_arguments(args: tuple[object, ...], shown: str) -> None:
    with pytest.raises(InvalidInputError, match=rf"Found {re.escape(shown)}\.$"):
        clopper_pearson_upper(*args)  # type: ignore[arg-type]


# --- pooling over model instances -------------------------------------------------------------


def _log_mean_exp_mp(values: list[float]) -> float:
    mpmath.mp.dps = 50
    total = mpmath.fsum(mpmath.exp(mpmath.mpf(v)) for v in values)
    return float(mpmath.log(total / len(values)))


@given(st.lists(st.floats(min_value=0.0, max_value=1000.0), min_size=1, max_size=40))
def test_mechanism_epsilon_matches_mpmath(values: list[float]) -> None:
    expected = _log_mean_exp_mp(values)
    assert mechanism_epsilon(values) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_mechanism_epsilon_huge_values_do_not_overflow() -> None:
    values = [800.0, 790.0, 10.0]
    with np.errstate(over="ignore"):
        assert not math.isfinite(math.log(np.mean(np.exp(values))))
    assert mechanism_epsilon(values) == pytest.approx(_log_mean_exp_mp(values), rel=1e-14)
    assert mechanism_epsilon(np.array([1e5, 1e5 - 1])) == pytest.approx(
        _log_mean_exp_mp([1e5, 1e5 - 1]), rel=1e-14
    )


@given(st.floats(min_value=0.0, max_value=1e6, allow_subnormal=False), st.integers(1, 500))
def test_mechanism_epsilon_identical_values(value: float, k: int) -> None:
    assert mechanism_epsilon([value] * k) == value


@given(st.lists(st.floats(min_value=0.0, max_value=50.0), min_size=1, max_size=20))
def test_mechanism_epsilon_between_mean_and_max(values: list[float]) -> None:
    pooled = mechanism_epsilon(values)
    assert float(np.mean(values)) - 1e-12 <= pooled <= max(values)


def test_mechanism_epsilon_accepts_arrays_and_column_vectors() -> None:
    assert mechanism_epsilon(np.array([[1.0], [2.0]])) == pytest.approx(
        _log_mean_exp_mp([1.0, 2.0]), rel=1e-14
    )


def test_mechanism_epsilon_rejects_bad_input() -> None:
    with pytest.raises(InsufficientDataError):
        mechanism_epsilon([])
    with pytest.raises(InvalidInputError, match=r"Found -0\.5\.$"):
        mechanism_epsilon([1.0, -0.5])
    with pytest.raises(InvalidInputError, match=r"Found nan\.$"):
        mechanism_epsilon([1.0, math.nan])
    with pytest.raises(InvalidInputError, match=r"Found inf\.$"):
        mechanism_epsilon([math.inf])
