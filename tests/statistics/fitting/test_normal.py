"""NormalFit, LossDistribution and the mixture fitter checked against scipy."""

from __future__ import annotations

import numpy as np
from scipy import stats

from epsstar.statistics.fitting import GaussianMixtureFit, LossDistribution, NormalFit
from epsstar.statistics.transform import LossTransform

POINTS = np.array([-3.0, -0.5, 0.0, 1.25, 4.0])


def test_cdf_and_sf_match_scipy() -> None:
    fit = NormalFit(mean=0.5, sd=1.5)
    # 1e-14 relative: ndtr against scipy.stats.norm, both double precision
    assert np.allclose(fit.cdf(POINTS), stats.norm.cdf(POINTS, 0.5, 1.5), rtol=1e-14, atol=0)
    assert np.allclose(fit.sf(POINTS), stats.norm.sf(POINTS, 0.5, 1.5), rtol=1e-14, atol=0)
    assert fit.cdf(POINTS).dtype == np.float64


def test_to_dict_names_its_parameters() -> None:
    assert NormalFit(mean=0.5, sd=1.5).to_dict() == {"family": "normal", "mean": 0.5, "sd": 1.5}


def test_loss_distribution_sf_is_the_fit_cdf_through_the_transform() -> None:
    transform = LossTransform(loss_min=0.0, loss_max=4.0)
    fit = NormalFit(mean=-1.0, sd=0.5)
    losses = np.array([0.1, 0.5, 1.0, 2.0, 3.5])
    dist = LossDistribution(fit, transform)
    # P(L > l) = P(phi < phi(l)); phi from the transform's closed form
    x = losses / 4.0 + 1.0
    phi = -x - np.log1p(-np.exp(-x))
    # 1e-12 relative: closed-form phi against the transform's own evaluation
    assert np.allclose(dist.sf(losses), stats.norm.cdf(phi, -1.0, 0.5), rtol=1e-12, atol=0)
    assert np.allclose(dist.sf(losses) + dist.cdf(losses), 1.0, rtol=1e-12, atol=0)


def test_mixture_fits_two_distinct_values() -> None:
    fit = GaussianMixtureFit.fit_components(np.array([0.0, 1.0]), 1)
    # 1e-6: scikit-learn's EM on two points; one component is their mean
    assert np.isclose(fit.means[0], 0.5, atol=1e-6)
