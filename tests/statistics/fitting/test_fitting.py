"""Transform and fitted distributions against scipy and closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from epsstar.exceptions import DegenerateDataError, FitError
from epsstar.statistics.fitting import GaussianMixtureFit, LossDistribution, NormalFit
from epsstar.statistics.transform import LossTransform


@given(
    low=st.floats(-100, 100),
    width=st.floats(1e-3, 1e3),
    alpha=st.floats(0.1, 5.0),
    u=st.lists(st.floats(0, 1), min_size=1, max_size=20),
)
def test_transform_round_trip_and_paper_steps(
    low: float, width: float, alpha: float, u: list[float]
) -> None:
    transform = LossTransform(low, low + width, alpha)
    losses = low + width * np.array(u)
    phi = transform.forward(losses)
    # Appendix B steps, literally.
    p = np.exp(-((losses - low) / width + alpha))
    np.testing.assert_allclose(phi, np.log(p) - np.log(1 - p), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(transform.inverse(phi), losses, rtol=1e-9, atol=1e-9 * width)


def test_transform_is_decreasing() -> None:
    phi = LossTransform(0.0, 10.0).forward(np.linspace(0, 10, 101))
    assert np.all(np.diff(phi) < 0)


def test_transform_refuses_equal_losses() -> None:
    with pytest.raises(DegenerateDataError, match="Found every loss = 2.0"):
        LossTransform.from_losses(np.full(5, 2.0), np.full(3, 2.0))


def test_normal_matches_scipy_including_far_tails() -> None:
    fit = NormalFit(1.5, 0.7)
    reference = stats.norm(1.5, 0.7)
    x = np.linspace(-20, 20, 81)
    np.testing.assert_allclose(fit.logcdf(x), reference.logcdf(x), rtol=1e-12)
    np.testing.assert_allclose(fit.logsf(x), reference.logsf(x), rtol=1e-12)
    q = np.array([1e-300, 1e-12, 0.3, 0.5, 0.9])
    np.testing.assert_allclose(fit.ppf(q), reference.ppf(q), rtol=1e-12)
    np.testing.assert_allclose(fit.isf(q), reference.isf(q), rtol=1e-12)


def test_normal_fit_is_maximum_likelihood() -> None:
    values = np.random.default_rng(0).normal(3, 2, 1000)
    fit = NormalFit.fit(values)
    assert (fit.mean, fit.sd) == pytest.approx(stats.norm.fit(values))
    with pytest.raises(DegenerateDataError, match="all equal"):
        NormalFit.fit(np.ones(10))


def test_mixture_cdf_matches_weighted_scipy_sum() -> None:
    fit = GaussianMixtureFit((0.2, 0.8), (-1.0, 2.0), (0.5, 1.5))
    x = np.linspace(-6, 10, 50)
    expected = 0.2 * stats.norm(-1, 0.5).cdf(x) + 0.8 * stats.norm(2, 1.5).cdf(x)
    np.testing.assert_allclose(fit.cdf(x), expected, rtol=1e-12)
    np.testing.assert_allclose(fit.sf(x), 1 - expected, rtol=1e-9, atol=1e-15)
    # Far tail on the log scale, where 1 - CDF underflows: the heavier component dominates.
    assert fit.logsf(40.0) == pytest.approx(np.log(0.8) + stats.norm(2, 1.5).logsf(40.0), rel=1e-9)


@given(q=st.floats(1e-250, 1 - 1e-12))
def test_mixture_quantiles_invert_the_cdf(q: float) -> None:
    fit = GaussianMixtureFit((0.3, 0.7), (0.0, 4.0), (1.0, 0.3))
    x = fit.ppf(np.array([q]))
    if q <= 0.5:
        assert fit.logcdf(x)[0] == pytest.approx(np.log(q), rel=1e-9, abs=1e-12)
    else:
        assert fit.logsf(x)[0] == pytest.approx(np.log1p(-q), rel=1e-7, abs=1e-12)
    if q > 1e-6:  # isf(1 - q) is ppf(q) while 1 - q keeps q's digits
        assert fit.isf(np.array([1 - q]))[0] == pytest.approx(x[0], rel=1e-6, abs=1e-6)


def test_mixture_selection_finds_two_modes_and_is_seeded() -> None:
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.normal(0, 1, 3000), rng.normal(6, 0.5, 2000)])
    fit = GaussianMixtureFit.fit(values, seed=1)
    assert fit.n_components >= 2
    # Within about 3.5 sampling sds of each component's mean (1/√3000 and 0.5/√2000).
    low, high = sorted(fit.means)[0], sorted(fit.means)[-1]
    assert low == pytest.approx(0.0, abs=0.065)
    assert high == pytest.approx(6.0, abs=0.04)
    assert GaussianMixtureFit.fit(values, seed=1) == fit


def test_mixture_rejects_bad_parameters() -> None:
    with pytest.raises(FitError):
        GaussianMixtureFit((1.0,), (0.0, 1.0), (1.0,))
    with pytest.raises(DegenerateDataError):
        GaussianMixtureFit.fit(np.ones(100))


def test_loss_units_view() -> None:
    transform = LossTransform(0.0, 4.0)
    fit = NormalFit(-1.2, 0.3)
    view = LossDistribution(fit, transform)
    loss = np.array([0.5, 1.0, 3.0])
    # P(L <= l) = P(phi >= phi(l)).
    np.testing.assert_allclose(view.cdf(loss), fit.sf(transform.forward(loss)))
    np.testing.assert_allclose(view.ppf(view.cdf(loss)), loss, rtol=1e-9)
    np.testing.assert_allclose(np.exp(view.logsf(loss)), 1 - view.cdf(loss), rtol=1e-9)
