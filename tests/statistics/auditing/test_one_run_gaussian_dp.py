"""epsstar.statistics.auditing.one_run.gaussian_dp: the one-run μ-GDP bound of Mahloujifar et al."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.auditing.one_run.approximate_dp import one_run_epsilon_lower_bound
from epsstar.statistics.auditing.one_run.gaussian_dp import (
    one_run_gdp_refutation_margin,
    one_run_mu_lower_bound,
)
from epsstar.statistics.auditing.one_run.guesses import count_correct_guesses
from epsstar.statistics.readings.conversions import gdp_epsilon
from tests.statistics.auditing.peer_values import COUNT_CASES


@st.composite
def counts(draw: st.DrawFn, max_m: int = 2000) -> tuple[int, int, int]:
    m = draw(st.integers(min_value=1, max_value=max_m))
    r = draw(st.integers(min_value=1, max_value=m))
    accuracy = draw(st.floats(min_value=0.5, max_value=1.0))
    return m, r, min(r, round(accuracy * r))


_NORMAL = NormalDist()


def _least_wrong(right: float, mu: float) -> float:
    """Φ(Φ^{-1}(t) − μ) with the standard library's normal (not scipy's)."""
    return 1.0 if right >= 1.0 else _NORMAL.cdf(_NORMAL.inv_cdf(right) - mu)


def _plain_recursion(m: int, r: int, v: int, mu: float, tau: float) -> float:
    """The recursion of the module written out without early exits (a second reading)."""
    right, wrong = tau * v / m, tau * (r - v) / m
    for i in range(v - 1, -1, -1):
        new_wrong = max(wrong, _least_wrong(right, mu))
        right = min(1.0, right + i / (r - i) * (new_wrong - wrong))
        wrong = new_wrong
    return right + wrong - r / m


@settings(deadline=None, max_examples=150)
@given(counts(max_m=300), st.floats(min_value=0.0, max_value=6.0))
def test_margin_sign_matches_the_plain_recursion(mrv: tuple[int, int, int], mu: float) -> None:
    # The early exits change the margin's size past a refutation, never its sign.
    m, r, v = mrv
    plain = _plain_recursion(m, r, v, mu, 0.05)
    assume(abs(plain) > 1e-12)  # on the boundary itself rounding may decide either way
    assert (one_run_gdp_refutation_margin(m, r, v, mu, 0.95) > 0) == (plain > 0)


@settings(deadline=None, max_examples=150)
@given(counts(), st.floats(min_value=0.0, max_value=6.0), st.floats(min_value=0.0, max_value=6.0))
def test_refutation_is_monotone_in_mu(mrv: tuple[int, int, int], a: float, b: float) -> None:
    # A refuted μ-GDP claim refutes every stronger one (smaller μ): the root search and the
    # nesting of the claims rely on it.
    m, r, v = mrv
    low, high = sorted((a, b))
    if one_run_gdp_refutation_margin(m, r, v, high) > 0:
        assert one_run_gdp_refutation_margin(m, r, v, low) > 0


@settings(deadline=None, max_examples=100)
@given(counts(), st.sampled_from([0.8, 0.95, 0.99]))
def test_bound_grows_with_right_guesses(mrv: tuple[int, int, int], confidence: float) -> None:
    m, r, v = mrv
    assume(v < r)
    bound = one_run_mu_lower_bound(m, r, v, confidence=confidence)
    assert one_run_mu_lower_bound(m, r, v + 1, confidence=confidence) >= bound - 1e-9
    assert one_run_mu_lower_bound(m, r, v, confidence=0.999) <= bound + 1e-9


@settings(deadline=None, max_examples=60)
@given(counts(max_m=500))
def test_bound_sits_on_the_refutation_boundary(mrv: tuple[int, int, int]) -> None:
    m, r, v = mrv
    mu = one_run_mu_lower_bound(m, r, v)
    if mu == 0.0:
        assert v == 0 or one_run_gdp_refutation_margin(m, r, v, 0.0) <= 0
        return
    assert one_run_gdp_refutation_margin(m, r, v, max(0.0, mu - 1e-7)) > 0
    assert one_run_gdp_refutation_margin(m, r, v, mu + 1e-7) <= 0


@pytest.mark.parametrize(
    "case",
    [case for case in COUNT_CASES if case[3] > 0.0],  # μ-GDP has no finite ε at δ = 0
    ids=lambda c: f"m{c[0]}-r{c[1]}-v{c[2]}-d{c[3]}",
)
def test_agrees_with_jax_privacy(case: tuple[float, ...]) -> None:
    m, r, v, delta, _, jax_fdp_eps, _ = case
    mu = one_run_mu_lower_bound(int(m), int(r), int(v), confidence=0.95)
    # jax_privacy searches ε (through dp_accounting's get_sigma_gaussian) with Brent's
    # method at xtol = 1e-6; the same refuted curve read at δ must agree to that.
    assert gdp_epsilon(delta, mu) == pytest.approx(jax_fdp_eps, abs=2e-6)


def test_gdp_reading_is_tighter_than_the_epsilon_delta_bound_on_the_peer_cases() -> None:
    # Mahloujifar et al.'s point, on the shared inputs (not a theorem for every count).
    for m, r, v, delta, *_ in COUNT_CASES:
        if delta > 0.0:
            mu = one_run_mu_lower_bound(int(m), int(r), int(v))
            steinke = one_run_epsilon_lower_bound(int(m), int(r), int(v), delta=delta)
            assert gdp_epsilon(delta, mu) > steinke


# --- validity: a Gaussian mechanism per canary -------------------------------------------------

REPETITIONS = 2000
#: As in test_one_run_approximate_dp: beyond this many failures in 2,000 repetitions, a bound
#: failing with probability ≤ 5 % has probability < 1e-6.
FAILURE_LIMIT = int(stats.binom.ppf(1 - 1e-6, REPETITIONS, 0.05))
TRUE_MU = 1.0


def _gaussian_failures(confidence: float) -> tuple[int, int]:
    """(μ-GDP failures, (ε, δ) failures) over canaries scored N(μ·in, 1), exactly μ-GDP."""
    m, k, delta = 200, 20, 1e-5
    true_eps = gdp_epsilon(delta, TRUE_MU)
    rng = np.random.default_rng(20240612)
    mu_failures = eps_failures = 0
    for _ in range(REPETITIONS):
        included = rng.random(m) < 0.5
        scores = rng.standard_normal(m) + TRUE_MU * included
        guess = count_correct_guesses(
            scores, included, k_plus=k, k_minus=k, direction="members_higher"
        )
        mu = one_run_mu_lower_bound(m, guess.guesses, guess.correct, confidence=confidence)
        mu_failures += mu > TRUE_MU
        eps = one_run_epsilon_lower_bound(
            m, guess.guesses, guess.correct, delta=delta, confidence=confidence
        )
        eps_failures += eps > true_eps
    return mu_failures, eps_failures


@pytest.mark.slow
def test_bounds_exceed_the_true_privacy_rarely() -> None:
    mu_failures, eps_failures = _gaussian_failures(0.95)
    assert mu_failures <= FAILURE_LIMIT
    assert eps_failures <= FAILURE_LIMIT


@pytest.mark.slow
def test_validity_check_can_fail() -> None:
    # A bound at 50 % confidence is not valid at 95 %: the same count must show it.
    mu_failures, _ = _gaussian_failures(0.5)
    assert mu_failures > FAILURE_LIMIT


# --- bad input ---------------------------------------------------------------------------------


def test_bad_input_is_refused() -> None:
    with pytest.raises(InvalidInputError, match=r"mu must be in \[0, inf\). Found nan."):
        one_run_gdp_refutation_margin(10, 5, 5, math.nan)
    with pytest.raises(InvalidInputError, match=r"correct must be at most the number"):
        one_run_mu_lower_bound(10, 5, 6)
