"""The tail models of ``method="tails"``: GPD, tailed empirical CDF, relative tails."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from epsstar.exceptions import InsufficientDataError
from epsstar.statistics.estimators.optimizer import parametric_supremum
from epsstar.statistics.fitting.tails import (
    GeneralizedPareto,
    RelativeTailed,
    TailedEmpirical,
    fit_generalized_pareto,
    fit_relative_tails,
)
from epsstar.statistics.summaries.tail_size import default_tail_size


@pytest.mark.parametrize("xi", [-0.4, 0.0, 0.3])
def test_generalized_pareto_matches_scipy(xi: float) -> None:
    gpd = GeneralizedPareto(xi, 2.0)
    reference = stats.genpareto(xi, scale=2.0)
    y = np.array([0.0, 0.1, 1.0, 3.0, 4.9])
    np.testing.assert_allclose(gpd.logsf(y), reference.logsf(y), rtol=1e-10, atol=1e-12)
    p = np.array([1e-300, 1e-12, 1e-3, 0.5, 1.0])
    np.testing.assert_allclose(gpd.isf(p), reference.isf(p), rtol=1e-9, atol=1e-12)


def test_generalized_pareto_beyond_its_endpoint_is_impossible() -> None:
    gpd = GeneralizedPareto(-0.5, 1.0)
    assert gpd.endpoint == pytest.approx(2.0)
    assert gpd.logsf(np.array([2.5]))[0] == -np.inf


@pytest.mark.parametrize(("xi", "sigma"), [(-0.3, 1.0), (0.0, 2.0), (0.25, 0.5)])
def test_generalized_pareto_fit_recovers_the_parameters(xi: float, sigma: float) -> None:
    sample = stats.genpareto(xi, scale=sigma).rvs(20_000, random_state=np.random.default_rng(3))
    fit = fit_generalized_pareto(sample)
    # Against the truth, within about 3.5 sampling sds of the MLE at n = 20,000
    # (sd(ξ) ≈ (1 + ξ)/√n ≤ 0.009, sd(σ)/σ ≈ √(2(1 + ξ)/n) ≤ 0.011).
    assert fit.xi == pytest.approx(xi, abs=0.03)
    assert fit.sigma == pytest.approx(sigma, rel=0.04)
    # Against scipy's maximum likelihood on the same sample: Zhang-Stephens approximates
    # it (measured 6e-4 apart at most here); 2e-3 protects the estimator's own steps,
    # whose errors move it by more than 0.01.
    shape, _, scale = stats.genpareto.fit(sample, floc=0.0)
    assert fit.xi == pytest.approx(shape, abs=2e-3)
    assert fit.sigma == pytest.approx(scale, rel=2e-3)


def test_generalized_pareto_fit_needs_data() -> None:
    with pytest.raises(InsufficientDataError, match="Found 3"):
        fit_generalized_pareto([1.0, 2.0, 3.0])
    with pytest.raises(InsufficientDataError, match="all 0"):
        fit_generalized_pareto(np.zeros(10))


def test_tail_scale_moves_every_threshold_outwards() -> None:
    rng = np.random.default_rng(3)
    train, population = rng.gamma(2.0, 5.0, 4_000), rng.gamma(3.0, 5.0, 6_000)
    fits = fit_relative_tails(train, population, tail_scale=0.25)
    for fit, values in zip(fits, (train, population), strict=True):
        k = default_tail_size(values.size, 0.25)
        assert fit.tail_mass == k / values.size
        assert fit.u_low == np.sort(values)[k]
    assert fits[0].reference.tail_mass == default_tail_size(10_000, 0.25) / 10_000
    fixed = fit_relative_tails(train, population, tail_size=40, tail_scale=0.25)
    assert [fit.tail_mass for fit in fixed] == [40 / 4_000, 40 / 6_000]


def _check_consistent(dist: TailedEmpirical | RelativeTailed) -> None:
    q = np.array([1e-12, 1e-6, 1e-3, 0.01, 0.2, 0.5, 0.8, 0.99, 1 - 1e-6])
    x = dist.ppf(q)
    assert np.all(np.diff(x) > 0)
    np.testing.assert_allclose(np.exp(dist.logcdf(x)), q, rtol=1e-6)
    small = np.array([1e-15, 1e-9, 1e-4])
    np.testing.assert_allclose(np.exp(dist.logsf(dist.isf(small))), small, rtol=1e-6)
    np.testing.assert_allclose(dist.isf(q), dist.ppf(1 - q), rtol=1e-5, atol=1e-9)
    grid = np.linspace(x[0], x[-1], 301)
    total = np.exp(dist.logcdf(grid)) + np.exp(dist.logsf(grid))
    np.testing.assert_allclose(total, 1.0, rtol=1e-9)
    assert np.all(np.diff(dist.logcdf(grid)) >= -1e-12)


def test_tailed_empirical_is_a_consistent_distribution() -> None:
    sample = np.random.default_rng(0).gamma(2.0, 5.0, 5000)
    _check_consistent(TailedEmpirical.fit(sample))


def test_relative_tails_are_consistent_distributions() -> None:
    rng = np.random.default_rng(1)
    train, population = fit_relative_tails(rng.gamma(2.0, 5.0, 3000), rng.gamma(4.0, 5.0, 3000))
    _check_consistent(train)
    _check_consistent(population)


def test_tailed_empirical_follows_the_true_tails_on_the_log_scale() -> None:
    law = stats.gamma(2.0, scale=5.0)
    fit = TailedEmpirical.fit(law.rvs(100_000, random_state=np.random.default_rng(2)))
    # The lower tail of Gamma(2) ends at 0 (xi = -1/2): its estimated endpoint limits how far
    # down it is followed; the exponential upper tail is followed to 1e-6.
    for q in (1e-3, 1e-4):
        assert fit.logcdf(np.array([law.ppf(q)]))[0] == pytest.approx(np.log(q), abs=0.35)
    for q in (1e-4, 1e-6):
        assert fit.logsf(np.array([law.isf(q)]))[0] == pytest.approx(np.log(q), abs=0.7)


def test_relative_tails_of_power_laws_recover_the_exponent() -> None:
    # Near 0, Gamma(2) ~ x^2 and Gamma(4) ~ x^4: the ratio of exponents is 2.
    rng = np.random.default_rng(4)
    train, population = fit_relative_tails(
        rng.gamma(2.0, 5.0, 100_000), rng.gamma(4.0, 5.0, 100_000)
    )
    assert population.gamma_low / train.gamma_low == pytest.approx(2.0, rel=0.15)


def test_tied_tails_stay_finite() -> None:
    values = np.concatenate([np.zeros(200), np.random.default_rng(5).gamma(2.0, 1.0, 800)])
    fit = TailedEmpirical.fit(values)
    assert np.isfinite(fit.ppf(np.array([0.5]))[0])
    train, population = fit_relative_tails(values, values[::-1].copy())
    assert parametric_supremum(train, population, 1e-5).epsilon == pytest.approx(0.0, abs=1e-9)


def test_too_few_values() -> None:
    with pytest.raises(InsufficientDataError, match="Found 20"):
        TailedEmpirical.fit(np.arange(20.0))
    with pytest.raises(InsufficientDataError, match="Found 1"):
        TailedEmpirical.fit(np.arange(100.0), tail_size=1)
    with pytest.raises(InsufficientDataError, match="single value"):
        TailedEmpirical.fit(np.concatenate([np.zeros(90), np.arange(10.0)]))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), shift=st.floats(0.0, 2.0))
def test_tail_supremum_is_eq_7_at_its_rates(seed: int, shift: float) -> None:
    rng = np.random.default_rng(seed)
    train, population = fit_relative_tails(rng.normal(-shift, 1, 400), rng.normal(0, 1, 400))
    found = parametric_supremum(train, population, 1e-5)
    if found.epsilon == 0.0:
        assert found.term == 0
        return
    # Eq. 7 of Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models",
    # at the reported rates, written out by hand:
    # the value is the log of the ratio the supremum names, and no other ratio is larger.
    t, eta, delta = found.fpr, found.fnr, 1e-5
    ratios = [(1 - delta - eta) / t, (1 - delta - t) / eta, (eta - delta) / (1 - t)]
    ratios.append((t - delta) / (1 - eta))
    # rel 1e-7: rates reported as floats from log-scale sums; a wrong term is far off.
    assert found.epsilon == pytest.approx(np.log(ratios[found.term - 1]), rel=1e-7)
    assert max(ratios) == pytest.approx(ratios[found.term - 1], rel=1e-7)


@pytest.mark.parametrize("n", [100, 110, 300])
def test_tied_excesses_fit_without_numerical_warnings(n: int) -> None:
    # With every excess equal, one point of the Zhang-Stephens grid is theta = 0 exactly
    # (30 + sqrt(n) = 40 for n = 100..120); its likelihood is the theta -> 0 limit.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fitted = fit_generalized_pareto(np.full(n, 0.5))
    assert np.isfinite(fitted.xi)
    assert fitted.sigma > 0
