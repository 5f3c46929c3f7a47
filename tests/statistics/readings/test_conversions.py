"""Tests for epsstar.statistics.readings.conversions, checked against mpmath and against each
other."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.bounds.from_counts import clopper_pearson_upper
from epsstar.statistics.readings.conversions import (
    NEIGHBOURING_RELATIONS,
    BayesSecurity,
    advantage_bound_dp,
    advantage_bound_gaussian,
    advantage_bound_rdp,
    bayes_security_dpsgd,
    bayes_security_from_delta_at_zero,
    epsilon_from_advantage_gaussian,
    epsilon_from_posterior_belief,
    gdp_delta,
    gdp_epsilon,
    gdp_mu_from_normals,
    gdp_mu_from_rates,
    gdp_mu_lower_bound,
    posterior_belief_bound,
    tpr_bound_bayes_security,
    tpr_bound_dp,
)

mpmath.mp.dps = 50


def mp_gdp_delta(epsilon: float, mu: float) -> mpmath.mpf:
    e, m = mpmath.mpf(epsilon), mpmath.mpf(mu)
    return mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)


# --- μ-GDP δ(ε) and its inverse ---------------------------------------------------------------

GRID_MU = [1e-3, 0.05, 0.3, 1.0, 2.5, 8.0, 40.0]
GRID_EPS = [0.0, 1e-8, 0.01, 0.3, 1.0, 3.0, 10.0, 40.0, 150.0, 800.0]


@pytest.mark.parametrize("mu", GRID_MU)
def test_gdp_delta_matches_mpmath_on_a_grid(mu: float) -> None:
    for eps in GRID_EPS:
        exact = mp_gdp_delta(eps, mu)
        ours = gdp_delta(eps, mu)
        if exact < mpmath.mpf("1e-300"):  # below the float range: must underflow cleanly
            assert 0.0 <= ours < 1e-290
            continue
        assert ours == pytest.approx(float(exact), rel=1e-10), (eps, mu)


@settings(max_examples=150, deadline=None)
@given(st.floats(0.0, 200.0), st.floats(0.01, 20.0))
def test_gdp_delta_matches_mpmath_random(eps: float, mu: float) -> None:
    exact = mp_gdp_delta(eps, mu)
    if exact < mpmath.mpf("1e-300"):
        return
    assert gdp_delta(eps, mu) == pytest.approx(float(exact), rel=1e-10)


@pytest.mark.parametrize(("eps", "mu"), [(7.2384944, 1.0), (25.09, 3.0), (3.4490, 0.5)])
def test_gdp_delta_tiny_values(eps: float, mu: float) -> None:
    # δ ≈ 1e-12: the naive difference of two CDF terms loses every digit here.
    exact = mp_gdp_delta(eps, mu)
    assert 1e-13 < exact < 1e-11
    assert gdp_delta(eps, mu) == pytest.approx(float(exact), rel=1e-11)


def test_gdp_delta_special_values() -> None:
    assert gdp_delta(3.0, 0.0) == 0.0
    for mu in (0.01, 1.0, 5.0):
        exact = 2 * mpmath.ncdf(mpmath.mpf(mu) / 2) - 1
        assert gdp_delta(0.0, mu) == pytest.approx(float(exact), rel=1e-12)


@given(st.floats(0.0, 50.0), st.floats(0.05, 10.0), st.floats(0.01, 5.0))
def test_gdp_delta_decreases_in_eps_and_increases_in_mu(eps: float, mu: float, step: float) -> None:
    assert gdp_delta(eps + step, mu) <= gdp_delta(eps, mu)
    assert gdp_delta(eps, mu + step) >= gdp_delta(eps, mu)


@settings(max_examples=150, deadline=None)
@given(st.floats(-300.0, math.log10(0.999)), st.floats(0.02, 30.0))
def test_gdp_epsilon_round_trip(log10_delta: float, mu: float) -> None:
    delta = 10.0**log10_delta
    eps = gdp_epsilon(delta, mu)
    assert eps >= 0.0
    if eps == 0.0:
        assert delta >= gdp_delta(0.0, mu) * (1 - 1e-12)
    else:
        assert gdp_delta(eps, mu) == pytest.approx(delta, rel=1e-9)


@pytest.mark.parametrize(
    ("delta", "mu"),
    [(1e-5, 1.0), (1e-12, 1.0), (1e-12, 0.2), (1e-100, 2.0), (0.05, 0.5), (1e-6, 10.0)],
)
def test_gdp_epsilon_matches_mpmath_root(delta: float, mu: float) -> None:
    target = mpmath.log(mpmath.mpf(delta))
    exact = mpmath.findroot(
        lambda e: mpmath.log(mp_gdp_delta(e, mu)) - target,
        (mpmath.mpf(0), mpmath.mpf(60) * mu + mu * mu),
        solver="anderson",
    )
    assert gdp_epsilon(delta, mu) == pytest.approx(float(exact), rel=1e-10)


def test_gdp_epsilon_zero_cases() -> None:
    assert gdp_epsilon(1e-5, 0.0) == 0.0
    mu = 1.0
    delta0 = float(2 * mpmath.ncdf(mpmath.mpf(mu) / 2) - 1)  # ≈ 0.383
    assert gdp_epsilon(delta0 + 1e-9, mu) == 0.0
    assert gdp_epsilon(0.9, mu) == 0.0
    assert gdp_epsilon(delta0 - 1e-3, mu) > 0.0


@given(st.floats(-6.0, 0.0), st.floats(0.05, 10.0), st.floats(0.01, 5.0))
def test_gdp_epsilon_monotone(log10_delta: float, mu: float, step: float) -> None:
    delta = 10.0**log10_delta * 0.99
    assert gdp_epsilon(delta, mu + step) >= gdp_epsilon(delta, mu)
    assert gdp_epsilon(delta / 2, mu) >= gdp_epsilon(delta, mu)


# --- μ from rates ------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(st.floats(0.01, 10.0), st.floats(0.0, 1.0))
def test_mu_from_rates_recovers_mu_along_the_gaussian_trade_off(mu: float, frac: float) -> None:
    # Rates of thresholding N(0, 1) against N(μ, 1) at τ, computed with mpmath:
    # FPR = 1 − Φ(τ), FNR = Φ(τ − μ); both stay ≤ 1 − 1e-6 over the range of τ.
    tau = -4.5 + frac * (mu + 9.0)
    fpr = float(mpmath.ncdf(-mpmath.mpf(tau)))
    fnr = float(mpmath.ncdf(mpmath.mpf(tau) - mpmath.mpf(mu)))
    assert gdp_mu_from_rates(fpr, fnr) == pytest.approx(mu, abs=1e-8)


def test_mu_from_rates_far_tails() -> None:
    # Tiny rates deep in the tails keep full precision.
    mu, tau = 12.0, 6.0
    fpr = float(mpmath.ncdf(-tau))
    fnr = float(mpmath.ncdf(tau - mu))
    assert fpr < 1e-8
    assert gdp_mu_from_rates(fpr, fnr) == pytest.approx(mu, rel=1e-12)


def test_mu_from_rates_edges() -> None:
    assert gdp_mu_from_rates(0.5, 0.5) == 0.0
    assert gdp_mu_from_rates(0.7, 0.6) == 0.0
    assert gdp_mu_from_rates(0.0, 1.0) == 0.0
    assert gdp_mu_from_rates(0.0, 0.3) == math.inf
    assert gdp_mu_from_rates(0.3, 0.0) == math.inf


def test_mu_from_normals() -> None:
    assert gdp_mu_from_normals(1.0, 3.5, 2.0) == 1.25
    assert gdp_mu_from_normals(3.5, 1.0, 2.0) == 1.25
    # Exact for equal variances: thresholding the two Normals reproduces the μ-GDP rates.
    m_a, m_b, sd, tau = -2.0, 1.0, 1.5, 0.3
    fpr = stats.norm.sf(tau, loc=m_a, scale=sd)
    fnr = stats.norm.cdf(tau, loc=m_b, scale=sd)
    assert gdp_mu_from_rates(fpr, fnr) == pytest.approx(gdp_mu_from_normals(m_a, m_b, sd))


def test_mu_lower_bound_uses_upper_bounds_on_both_rates() -> None:
    fp, neg, fn, pos, c = 30, 1000, 400, 1000, 0.95
    fp_up = stats.beta.isf((1 - c) / 2, fp + 1, neg - fp)
    fn_up = stats.beta.isf((1 - c) / 2, fn + 1, pos - fn)
    expected = stats.norm.isf(fp_up) - stats.norm.ppf(fn_up)
    result = gdp_mu_lower_bound(fp, neg, fn, pos, confidence=c)
    assert result == pytest.approx(expected, rel=1e-9)
    assert result < gdp_mu_from_rates(fp / neg, fn / pos)


def test_mu_lower_bound_approaches_mu_from_below() -> None:
    mu, tau = 1.5, 1.0
    fpr, fnr = stats.norm.sf(tau), stats.norm.cdf(tau - mu)
    previous = 0.0
    for n in (100, 10_000, 1_000_000, 100_000_000):
        bound = gdp_mu_lower_bound(round(fpr * n), n, round(fnr * n), n)
        assert previous <= bound < mu + 1e-3
        previous = bound
    assert previous == pytest.approx(mu, abs=2e-3)


def test_mu_lower_bound_no_errors_is_finite() -> None:
    bound = gdp_mu_lower_bound(0, 1000, 0, 1000)
    u = clopper_pearson_upper(0, 1000, 0.95)
    assert bound == pytest.approx(2 * stats.norm.isf(u), rel=1e-12)
    assert math.isfinite(bound)


# --- posterior belief and advantage -----------------------------------------------------------


def test_posterior_belief_known_values() -> None:
    assert posterior_belief_bound(0.0) == 0.5
    assert posterior_belief_bound(math.log(3.0)) == pytest.approx(0.75, rel=1e-15)
    assert posterior_belief_bound(1000.0) == 1.0
    assert epsilon_from_posterior_belief(0.5) == 0.0
    assert epsilon_from_posterior_belief(0.75) == pytest.approx(math.log(3.0), rel=1e-15)


@given(st.floats(0.0, 15.0))
def test_posterior_belief_round_trip_from_epsilon(eps: float) -> None:
    assert epsilon_from_posterior_belief(posterior_belief_bound(eps)) == pytest.approx(
        eps, abs=1e-8
    )


@given(st.floats(0.5, 1.0, exclude_max=True))
def test_posterior_belief_round_trip_from_rho(rho: float) -> None:
    assert posterior_belief_bound(epsilon_from_posterior_belief(rho)) == pytest.approx(
        rho, rel=1e-15
    )


@given(st.floats(0.0, 50.0), st.floats(1e-12, 0.5), st.floats(0.0, 5.0))
def test_advantage_bounds_in_unit_interval_and_monotone(
    eps: float, delta: float, step: float
) -> None:
    for bound in (
        advantage_bound_gaussian(eps, delta),
        advantage_bound_dp(eps, delta),
        advantage_bound_rdp(eps, 2.0),
    ):
        assert 0.0 <= bound <= 1.0
    assert advantage_bound_gaussian(eps + step, delta) >= advantage_bound_gaussian(eps, delta)
    assert advantage_bound_gaussian(eps, delta * 1.5) >= advantage_bound_gaussian(eps, delta)
    assert advantage_bound_dp(eps + step, delta) >= advantage_bound_dp(eps, delta)
    assert advantage_bound_dp(eps, delta * 1.5) >= advantage_bound_dp(eps, delta)
    assert advantage_bound_rdp(eps + step, 2.0) >= advantage_bound_rdp(eps, 2.0)
    assert advantage_bound_rdp(eps, 2.0 + step) <= advantage_bound_rdp(eps, 2.0)


@pytest.mark.parametrize(("eps", "delta"), [(0.1, 1e-5), (1.0, 1e-5), (6.0, 1e-6), (3.0, 0.3)])
def test_advantage_gaussian_against_mpmath(eps: float, delta: float) -> None:
    scale = mpmath.sqrt(2 * mpmath.log(mpmath.mpf("1.25") / mpmath.mpf(delta)))
    exact = 2 * mpmath.ncdf(mpmath.mpf(eps) / (2 * scale)) - 1
    assert advantage_bound_gaussian(eps, delta) == pytest.approx(float(exact), rel=1e-13)


@given(st.floats(0.0, 0.999999), st.floats(1e-12, 0.9))
def test_advantage_gaussian_round_trip(rho: float, delta: float) -> None:
    eps = epsilon_from_advantage_gaussian(rho, delta)
    assert advantage_bound_gaussian(eps, delta) == pytest.approx(rho, rel=1e-12, abs=1e-15)


@given(st.floats(0.0, 60.0), st.floats(1e-12, 0.9))
def test_advantage_gaussian_inverse_round_trip(eps: float, delta: float) -> None:
    rho = advantage_bound_gaussian(eps, delta)
    if rho < 1 - 1e-9:  # above that the advantage no longer resolves ε
        assert epsilon_from_advantage_gaussian(rho, delta) == pytest.approx(eps, rel=1e-6)


@pytest.mark.parametrize(("eps_rdp", "order"), [(0.5, 2.0), (4.0, 8.0), (30.0, 1.5)])
def test_advantage_rdp_against_mpmath(eps_rdp: float, order: float) -> None:
    exact = 2 * mpmath.ncdf(mpmath.sqrt(mpmath.mpf(eps_rdp) / (2 * mpmath.mpf(order)))) - 1
    assert advantage_bound_rdp(eps_rdp, order) == pytest.approx(float(exact), rel=1e-13)


def test_advantage_rdp_composes() -> None:
    # k steps of ε_RDP,i or one step of k·ε_RDP,i give the same ρ_α (Section 4.4).
    assert advantage_bound_rdp(10 * 0.3, 4.0) == pytest.approx(advantage_bound_rdp(3.0, 4.0))


@pytest.mark.parametrize(("eps", "delta"), [(0.0, 0.0), (0.0, 1e-5), (1.0, 1e-5), (5.0, 0.1)])
def test_advantage_dp_against_mpmath(eps: float, delta: float) -> None:
    e = mpmath.exp(mpmath.mpf(eps))
    exact = (e - 1 + 2 * mpmath.mpf(delta)) / (e + 1)
    assert advantage_bound_dp(eps, delta) == pytest.approx(float(exact), rel=1e-14, abs=1e-300)


def test_advantage_dp_large_eps() -> None:
    assert advantage_bound_dp(1e4, 0.5) == 1.0
    assert advantage_bound_dp(0.0, 1.0) == 1.0


# --- TPR at FPR -------------------------------------------------------------------------------


@given(st.floats(0.0, 1.0), st.floats(0.0, 30.0), st.floats(0.0, 0.5))
def test_tpr_bound_dp_is_the_edge_of_the_privacy_region(
    fpr: float, eps: float, delta: float
) -> None:
    # Nasr et al.'s inequalities with FN = 1 − TPR: FN + e^ε FP ≥ 1 − δ and FP + e^ε FN ≥ 1 − δ.
    tpr = tpr_bound_dp(fpr, eps, delta)
    assert max(fpr, delta) - 1e-12 <= tpr <= 1.0
    fnr = mpmath.mpf(1) - mpmath.mpf(tpr)
    e = mpmath.exp(mpmath.mpf(eps))
    slack1 = fnr + e * mpmath.mpf(fpr) - (1 - mpmath.mpf(delta))
    slack2 = mpmath.mpf(fpr) + e * fnr - (1 - mpmath.mpf(delta))
    tol = mpmath.mpf("1e-12") * (1 + e)
    assert slack1 >= -tol
    assert slack2 >= -tol
    assert tpr == 1.0 or min(slack1, slack2) <= tol  # nothing larger is allowed


@settings(deadline=None)
@given(st.floats(0.1, 5.0), st.floats(0.0, 20.0), st.floats(0.0, 1.0))
def test_gaussian_trade_off_lies_inside_the_dp_region(mu: float, eps: float, fpr: float) -> None:
    # μ-GDP implies (ε, δ_μ(ε))-DP, so the Gaussian test's TPR never exceeds the DP bound.
    gaussian_tpr = stats.norm.cdf(stats.norm.ppf(fpr) + mu)
    assert gaussian_tpr <= tpr_bound_dp(fpr, eps, gdp_delta(eps, mu)) + 1e-12


def test_tpr_bound_dp_values() -> None:
    assert tpr_bound_dp(0.0, 1.0, 1e-5) == 1e-5
    assert tpr_bound_dp(0.01, 1.0, 0.0) == pytest.approx(0.01 * math.e, rel=1e-15)
    assert tpr_bound_dp(0.9, 1.0, 0.0) == pytest.approx(1 - 0.1 / math.e, rel=1e-15)
    assert tpr_bound_dp(1e-300, 1e4, 0.0) == 1.0
    assert tpr_bound_dp(0.3, 0.0, 0.0) == pytest.approx(0.3)


def test_tpr_bound_bayes_security() -> None:
    assert tpr_bound_bayes_security(0.1, 0.9) == pytest.approx(0.2)
    assert tpr_bound_bayes_security(0.5, 0.2) == 1.0
    assert tpr_bound_bayes_security(0.3, 1.0) == pytest.approx(0.3)
    assert tpr_bound_bayes_security(0.0, 0.0) == 1.0


# --- Bayes security of DP-SGD -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "steps", "sigma"),
    [(0.01, 1000, 1.0), (1e-4, 500_000, 2.0), (1.0, 1, 0.5), (0.2, 10, 50.0)],
)
def test_bayes_security_against_mpmath(p: float, steps: int, sigma: float) -> None:
    x = mpmath.mpf(p) * mpmath.sqrt(steps) / (mpmath.sqrt(2) * mpmath.mpf(sigma))
    sub = bayes_security_dpsgd(p, steps, sigma)
    assert isinstance(sub, BayesSecurity)
    assert sub.neighbouring == "substitution"
    assert sub.beta_closed_form == pytest.approx(float(1 - mpmath.erf(x)), rel=1e-13)
    assert sub.advantage_closed_form == pytest.approx(float(mpmath.erf(x)), rel=1e-13)
    assert sub.error_order == pytest.approx(math.sqrt(p * steps) / sigma, rel=1e-15)
    add = bayes_security_dpsgd(p, steps, sigma, neighbouring="add_remove")
    assert add.beta_closed_form == pytest.approx(float(1 - mpmath.erf(x / 2)), rel=1e-13)


@given(st.floats(1e-6, 1.0), st.integers(1, 10**7), st.floats(0.1, 100.0))
def test_add_remove_is_substitution_with_twice_the_noise(
    p: float, steps: int, sigma: float
) -> None:
    add = bayes_security_dpsgd(p, steps, sigma, neighbouring="add_remove")
    sub = bayes_security_dpsgd(p, steps, sigma, neighbouring="substitution")
    twice = bayes_security_dpsgd(p, steps, 2 * sigma, neighbouring="substitution")
    assert add.beta_closed_form == pytest.approx(twice.beta_closed_form, rel=1e-12, abs=1e-300)
    assert add.beta_closed_form >= sub.beta_closed_form
    assert add.error_order == sub.error_order
    for result in (add, sub):
        assert 0.0 <= result.beta_closed_form <= 1.0
        total = result.beta_closed_form + result.advantage_closed_form
        assert total == pytest.approx(1.0, abs=1e-15)


def test_bayes_security_matches_the_paper_figure_parameters() -> None:
    # Paper, eq. (4): p = erfinv(1 − β*)·√2·σ/√T inverts Corollary 7.
    beta, steps, sigma = 0.9, 5000, 3.0
    p = float(mpmath.erfinv(1 - mpmath.mpf(beta)) * mpmath.sqrt(2) * sigma / mpmath.sqrt(steps))
    assert bayes_security_dpsgd(p, steps, sigma).beta_closed_form == pytest.approx(beta, rel=1e-12)


def test_bayes_security_from_delta_at_zero() -> None:
    # Proposition 8: a (0, δ)-DP mechanism has β* = 1 − δ; e.g. one Gaussian step at
    # sensitivity 1 and σ = 2 has δ(0) = TV = 2Φ(1/4) − 1.
    delta = 2 * stats.norm.cdf(0.25) - 1
    assert bayes_security_from_delta_at_zero(delta) == pytest.approx(2 * stats.norm.sf(0.25))
    assert bayes_security_from_delta_at_zero(0.0) == 1.0
    assert bayes_security_from_delta_at_zero(1.0) == 0.0


def test_unknown_neighbouring_lists_the_allowed_values() -> None:
    with pytest.raises(InvalidInputError) as info:
        bayes_security_dpsgd(0.01, 100, 1.0, neighbouring="replace_one")
    message = str(info.value)
    assert all(repr(name) in message for name in NEIGHBOURING_RELATIONS)
    assert message.endswith("Found 'replace_one'.")


# --- argument validation ----------------------------------------------------------------------

BAD_CALLS: list[tuple[Callable[..., Any], tuple[Any, ...], str]] = [
    (posterior_belief_bound, (-0.1,), "-0.1"),
    (posterior_belief_bound, (math.inf,), "inf"),
    (posterior_belief_bound, (math.nan,), "nan"),
    (epsilon_from_posterior_belief, (0.4,), "0.4"),
    (epsilon_from_posterior_belief, (1.0,), "1.0"),
    (advantage_bound_gaussian, (-1.0, 1e-5), "-1.0"),
    (advantage_bound_gaussian, (1.0, 0.0), "0.0"),
    (advantage_bound_gaussian, (1.0, 1.0), "1.0"),
    (epsilon_from_advantage_gaussian, (1.0, 1e-5), "1.0"),
    (epsilon_from_advantage_gaussian, (-0.2, 1e-5), "-0.2"),
    (epsilon_from_advantage_gaussian, (0.5, 2.0), "2.0"),
    (advantage_bound_rdp, (-2.0, 3.0), "-2.0"),
    (advantage_bound_rdp, (2.0, 1.0), "1.0"),
    (advantage_bound_dp, (-3.0, 0.1), "-3.0"),
    (advantage_bound_dp, (1.0, 1.5), "1.5"),
    (tpr_bound_dp, (1.2, 1.0, 0.0), "1.2"),
    (tpr_bound_dp, (0.2, -1.0, 0.0), "-1.0"),
    (tpr_bound_dp, (0.2, 1.0, -0.01), "-0.01"),
    (gdp_mu_from_rates, (-0.1, 0.2), "-0.1"),
    (gdp_mu_from_rates, (0.1, 1.01), "1.01"),
    (gdp_mu_from_normals, (0.0, 1.0, 0.0), "0.0"),
    (gdp_mu_from_normals, (math.nan, 1.0, 1.0), "nan"),
    (gdp_mu_from_normals, (0.0, math.inf, 1.0), "inf"),
    (gdp_delta, (-1.0, 1.0), "-1.0"),
    (gdp_delta, (1.0, -1.0), "-1.0"),
    (gdp_delta, (1.0, math.inf), "inf"),
    (gdp_epsilon, (0.0, 1.0), "0.0"),
    (gdp_epsilon, (1.0, 1.0), "1.0"),
    (gdp_epsilon, (1e-5, -0.5), "-0.5"),
    (gdp_mu_lower_bound, (-1, 10, 0, 10), "-1"),
    (gdp_mu_lower_bound, (0, 10, 11, 10), "11"),
    (gdp_mu_lower_bound, (0, 10, 0, 10, 1.5), "1.5"),
    (bayes_security_dpsgd, (0.0, 10, 1.0), "0.0"),
    (bayes_security_dpsgd, (1.5, 10, 1.0), "1.5"),
    (bayes_security_dpsgd, (0.1, 0, 1.0), "0"),
    (bayes_security_dpsgd, (0.1, 2.5, 1.0), "2.5"),
    (bayes_security_dpsgd, (0.1, 10, 0.0), "0.0"),
    (bayes_security_dpsgd, (0.1, 10, -2.0), "-2.0"),
    (bayes_security_from_delta_at_zero, (1.2,), "1.2"),
    (bayes_security_from_delta_at_zero, (-0.1,), "-0.1"),
    (tpr_bound_bayes_security, (0.5, 1.1), "1.1"),
    (tpr_bound_bayes_security, (-0.5, 0.5), "-0.5"),
]


@pytest.mark.parametrize(
    ("function", "args", "shown"),
    BAD_CALLS,
    ids=[f"{f.__name__}-{i}" for i, (f, _, _) in enumerate(BAD_CALLS)],
)
def test_invalid_arguments_raise_with_the_value(
    function: Callable[..., Any], args: tuple[Any, ...], shown: str
) -> None:
    with pytest.raises(InvalidInputError, match=rf"Found {re.escape(shown)}\.$") as info:
        function(*args)
    assert "\n" not in str(info.value)


def test_non_numeric_argument() -> None:
    with pytest.raises(InvalidInputError, match=r"Found 'abc'\.$"):
        posterior_belief_bound("abc")  # type: ignore[arg-type]


def test_outputs_are_python_floats() -> None:
    values = [
        posterior_belief_bound(1.0),
        epsilon_from_posterior_belief(0.7),
        advantage_bound_gaussian(1.0, 1e-5),
        epsilon_from_advantage_gaussian(0.3, 1e-5),
        advantage_bound_rdp(1.0, 2.0),
        advantage_bound_dp(1.0, 1e-5),
        tpr_bound_dp(0.1, 1.0, 1e-5),
        gdp_mu_from_rates(0.1, 0.2),
        gdp_mu_from_normals(0.0, 1.0, 1.0),
        gdp_delta(1.0, 1.0),
        gdp_epsilon(1e-5, 1.0),
        gdp_mu_lower_bound(10, 100, 10, 100),
        tpr_bound_bayes_security(0.1, 0.9),
    ]
    assert all(type(v) is float for v in values)
    assert all(np.isfinite(values))
