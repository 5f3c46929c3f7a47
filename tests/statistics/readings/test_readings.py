"""Membership readings of a parametric Epsilon* checked against closed forms."""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

from epsstar.statistics._validation import FloatArray
from epsstar.statistics.estimators.estimator import epsilon_star
from epsstar.statistics.fitting import NormalFit
from epsstar.statistics.readings.readings import membership_readings
from epsstar.statistics.results import EpsilonStarResult


def _parametric_case() -> tuple[FloatArray, FloatArray, EpsilonStarResult]:
    rng = np.random.default_rng(1)
    train = rng.gamma(2.0, 1.0, 400)
    population = rng.gamma(2.5, 1.0, 400)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a poor-fit warning is beside the point here
        result = epsilon_star(train, population, delta=1e-3, seed=0, method="parametric")
    return train, population, result


def test_advantage_bound_is_humphries_closed_form() -> None:
    train, population, result = _parametric_case()
    readings = membership_readings(train, population, result)
    eps, delta = result.epsilon, result.delta
    expected = (np.exp(eps) - 1.0 + 2.0 * delta) / (np.exp(eps) + 1.0)
    # 1e-12 relative: tanh form vs the paper's quotient, both float64
    assert np.isclose(readings.advantage_bound, expected, rtol=1e-12, atol=0.0)


def test_fitted_tpr_is_the_two_normal_fits_composed() -> None:
    train, population, result = _parametric_case()
    readings = membership_readings(train, population, result)
    train_fit = result.fits["train"].fit
    pop_fit = result.fits["population"].fit
    assert isinstance(train_fit, NormalFit)
    assert isinstance(pop_fit, NormalFit)
    for reading in readings.tpr_at_fpr:
        # the transform is decreasing, so a loss below the population's FPR quantile is a
        # transformed value above the population's upper FPR quantile
        phi = stats.norm.isf(reading.fpr, pop_fit.mean, pop_fit.sd)
        expected = stats.norm.sf(phi, train_fit.mean, train_fit.sd)
        assert reading.tpr_fitted is not None
        # 1e-9 relative: ndtri/ndtr against scipy.stats.norm, through a transform round trip
        assert np.isclose(reading.tpr_fitted, expected, rtol=1e-9, atol=1e-15)
