"""epsstar.statistics.auditing.one_run.approximate_dp: the one-run (ε, δ) bound of Steinke et al."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.auditing.one_run.approximate_dp import (
    one_run_epsilon_lower_bound,
    one_run_p_value,
)
from epsstar.statistics.auditing.one_run.guesses import count_correct_guesses
from tests.statistics.auditing.peer_values import COUNT_CASES

mpmath.mp.dps = 50


def _mp_tail(r: int, v: int, eps: float) -> mpmath.mpf:
    """P[Binomial(r, q) ≥ v], q = e^ε/(1 + e^ε), summed term by term in 50 digits."""
    q = mpmath.mpf(1) / (1 + mpmath.exp(-mpmath.mpf(eps)))
    return mpmath.fsum(mpmath.binomial(r, j) * q**j * (1 - q) ** (r - j) for j in range(v, r + 1))


def _mp_p_value(m: int, r: int, v: int, eps: float, delta: float) -> mpmath.mpf:
    """The theorem's bound with the δ term over every i = 1..v (no window), in 50 digits."""
    q = mpmath.mpf(1) / (1 + mpmath.exp(-mpmath.mpf(eps)))
    pmf = [mpmath.binomial(r, j) * q**j * (1 - q) ** (r - j) for j in range(v)]
    running, best = mpmath.mpf(0), mpmath.mpf(0)
    for i in range(1, v + 1):
        running += pmf[v - i]
        best = max(best, running / i)
    return min(mpmath.mpf(1), _mp_tail(r, v, eps) + 2 * m * mpmath.mpf(delta) * best)


@st.composite
def counts(draw: st.DrawFn, max_m: int = 400) -> tuple[int, int, int]:
    """(m, r, v) with the right guesses drawn near a plausible accuracy (not just r/2)."""
    m = draw(st.integers(min_value=1, max_value=max_m))
    r = draw(st.integers(min_value=1, max_value=m))
    accuracy = draw(st.floats(min_value=0.5, max_value=1.0))
    shift = draw(st.integers(min_value=-3, max_value=3))
    return m, r, min(r, max(0, round(accuracy * r) + shift))


deltas = st.sampled_from([0.0, 1e-8, 1e-5, 1e-3, 0.05])


# --- closed forms ------------------------------------------------------------------------------


@settings(deadline=None, max_examples=60)
@given(counts(max_m=300), st.floats(min_value=0.0, max_value=6.0))
def test_pure_epsilon_p_value_is_the_binomial_tail(mrv: tuple[int, int, int], eps: float) -> None:
    # δ = 0: the bound is the randomized-response tail; 1e-10 relative is double precision
    # after scipy's incomplete beta function.
    m, r, v = mrv
    assert one_run_p_value(m, r, v, eps) == pytest.approx(
        float(min(1, _mp_tail(r, v, eps))), rel=1e-10, abs=1e-300
    )


@settings(deadline=None, max_examples=60)
@given(counts(max_m=300), st.floats(min_value=0.0, max_value=6.0), deltas)
def test_p_value_with_delta_matches_the_full_sum(
    mrv: tuple[int, int, int], eps: float, delta: float
) -> None:
    # The δ term is computed over a window of the binomial; the full sum in 50 digits must
    # agree to double precision (the window's omitted mass is below e^-60).
    m, r, v = mrv
    expected = float(_mp_p_value(m, r, v, eps, delta))
    assert one_run_p_value(m, r, v, eps, delta) == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_window_cut_matters_only_below_double_precision() -> None:
    # r large enough that the window (mean − 40·sd − 40) is well inside [0, v − 1].
    m, r, v, eps, delta = 100_000, 5_000, 3_500, 0.5, 1e-6
    expected = float(_mp_p_value(m, r, v, eps, delta))
    assert one_run_p_value(m, r, v, eps, delta) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("r", [1, 5, 20, 100, 1000])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_all_right_pure_bound_closed_form(r: int, confidence: float) -> None:
    # v = r, δ = 0: q^r = 1 − c, so ε_lo = logit((1 − c)^(1/r)) when that is ≥ 0.
    expected = max(0.0, float(stats.logistic.ppf((1 - confidence) ** (1 / r))))
    got = one_run_epsilon_lower_bound(r, r, r, delta=0.0, confidence=confidence)
    assert got == pytest.approx(expected, abs=1e-9)


@settings(deadline=None, max_examples=40)
@given(counts(max_m=300), st.sampled_from([0.9, 0.95, 0.99]), deltas)
def test_bound_is_where_the_p_value_meets_the_level(
    mrv: tuple[int, int, int], confidence: float, delta: float
) -> None:
    # The defining property, against the 50-digit p-value: at ε_lo the p-value equals
    # 1 − c (to the 1e-12 root tolerance), and a hair below ε_lo it is at most 1 − c.
    m, r, v = mrv
    bound = one_run_epsilon_lower_bound(m, r, v, delta=delta, confidence=confidence)
    if bound == 0.0:
        assert float(_mp_p_value(m, r, v, 0.0, delta)) > 1 - confidence
        return
    assert float(_mp_p_value(m, r, v, bound - 1e-9, delta)) <= 1 - confidence
    assert float(_mp_p_value(m, r, v, bound + 1e-9, delta)) > 1 - confidence


# --- monotonicity ------------------------------------------------------------------------------


@settings(deadline=None, max_examples=200)
@given(
    counts(max_m=3000),
    st.floats(min_value=0.0, max_value=8.0),
    st.floats(min_value=0.0, max_value=8.0),
    deltas,
)
def test_p_value_increases_with_epsilon(
    mrv: tuple[int, int, int], a: float, b: float, delta: float
) -> None:
    # The root search relies on it (the δ term alone need not be monotone in ε).
    m, r, v = mrv
    low, high = sorted((a, b))
    assert one_run_p_value(m, r, v, low, delta) <= one_run_p_value(m, r, v, high, delta) + 1e-12


@settings(deadline=None, max_examples=100)
@given(counts(max_m=2000), deltas, st.sampled_from([0.8, 0.95, 0.99]))
def test_bound_grows_with_right_guesses_and_shrinks_with_delta(
    mrv: tuple[int, int, int], delta: float, confidence: float
) -> None:
    m, r, v = mrv
    assume(v < r)
    bound = one_run_epsilon_lower_bound(m, r, v, delta=delta, confidence=confidence)
    assert one_run_epsilon_lower_bound(m, r, v + 1, delta=delta, confidence=confidence) >= bound
    assert one_run_epsilon_lower_bound(m, r, v, delta=0.0, confidence=confidence) >= bound - 1e-9
    assert one_run_epsilon_lower_bound(m, r, v, delta=delta, confidence=0.999) <= bound + 1e-9


# --- the peers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("case", COUNT_CASES, ids=lambda c: f"m{c[0]}-r{c[1]}-v{c[2]}-d{c[3]}")
def test_agrees_with_jax_privacy_and_ml_privacy_meter(case: tuple[float, ...]) -> None:
    m, r, v, delta, jax_eps, _, meter_eps = case
    ours = one_run_epsilon_lower_bound(int(m), int(r), int(v), delta=delta, confidence=0.95)
    # jax_privacy's Brent's method stops at xtol = 1e-6.
    assert ours == pytest.approx(jax_eps, abs=2e-6)
    # ML Privacy Meter bisects to a 1e-5 bracket and returns its lower end.
    assert 0.0 <= ours - meter_eps <= 1e-5 + 1e-9


# --- validity: simulated ε-DP canaries ----------------------------------------------------------

REPETITIONS = 2000
#: If the bound exceeds the true ε with probability ≤ 5 %, more than this many of 2,000
#: repetitions do so with probability < 1e-6 (binomial upper tail), so the limit only trips
#: on a bound that is not valid.
FAILURE_LIMIT = int(stats.binom.ppf(1 - 1e-6, REPETITIONS, 0.05))


def _randomized_response_failures(confidence: float, delta: float) -> int:
    """How often the one-run bound exceeds ε = 1 over canaries from ε-DP randomized response."""
    eps, m, k = 1.0, 500, 100
    q = math.exp(eps) / (1 + math.exp(eps))
    rng = np.random.default_rng(20240611)
    failures = 0
    for _ in range(REPETITIONS):
        included = rng.random(m) < 0.5
        # Randomized response: each canary's output bit is its inclusion bit w.p. q, flipped
        # otherwise — exactly ε-DP per canary; the jitter breaks ties and is independent.
        output = np.where(rng.random(m) < q, included, ~included)
        scores = output + 0.5 * rng.random(m)
        guess = count_correct_guesses(
            scores, included, k_plus=k, k_minus=k, direction="members_higher"
        )
        bound = one_run_epsilon_lower_bound(
            m, guess.guesses, guess.correct, delta=delta, confidence=confidence
        )
        failures += bound > eps
    return failures


@pytest.mark.slow
def test_bound_exceeds_true_epsilon_rarely() -> None:
    assert _randomized_response_failures(0.95, 0.0) <= FAILURE_LIMIT


@pytest.mark.slow
def test_validity_check_can_fail() -> None:
    # The same check on a bound at 50 % confidence (failing about half the time) trips the
    # limit: the simulation can tell a valid bound from an invalid one.
    assert _randomized_response_failures(0.5, 0.0) > FAILURE_LIMIT


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0, 0, 0), "canaries must be an integer ≥ 1. Found 0."),
        ((10, 11, 0), "guesses must be at most the number of canaries (10). Found 11."),
        ((10, 5, 6), "correct must be at most the number of guesses (5). Found 6."),
        ((10, 5, -1), "correct must be an integer ≥ 0. Found -1."),
        ((10, 5.0, 1), "guesses must be an integer ≥ 0. Found 5.0."),
    ],
)
def test_bad_counts_are_refused(args: tuple[object, ...], message: str) -> None:
    with pytest.raises(InvalidInputError) as error:
        one_run_epsilon_lower_bound(*args)
    assert str(error.value) == message


def test_bad_delta_and_confidence_are_refused() -> None:
    with pytest.raises(InvalidInputError, match=r"delta must be in \[0, 0.5\). Found 0.5."):
        one_run_epsilon_lower_bound(10, 5, 5, delta=0.5)
    with pytest.raises(InvalidInputError, match=r"confidence must be in \(0, 1\). Found 1."):
        one_run_epsilon_lower_bound(10, 5, 5, confidence=1)
    with pytest.raises(InvalidInputError, match=r"epsilon must be in \[0, inf\). Found -1."):
        one_run_p_value(10, 5, 5, -1.0)
