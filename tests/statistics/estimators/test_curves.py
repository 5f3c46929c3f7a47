"""Trade-off curves from fitted and empirical CDFs."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.estimators.curves import empirical_curve, parametric_curve
from epsstar.statistics.fitting import NormalFit
from epsstar.statistics.readings.conversions import gdp_mu_from_rates


def test_parametric_curve_of_equal_variance_normals_is_a_gdp_curve() -> None:
    curve = parametric_curve(NormalFit(0.0, 2.0), NormalFit(3.0, 2.0))
    assert np.all(np.diff(curve.thresholds) > 0)
    assert np.all(np.diff(curve.fpr) >= 0)
    assert np.all(np.diff(curve.fnr) <= 0)
    inside = (
        (curve.fpr > 1e-10)
        & (curve.fnr > 1e-10)
        & (curve.fpr < 1 - 1e-10)
        & (curve.fnr < 1 - 1e-10)
    )
    mus = [
        gdp_mu_from_rates(a, b) for a, b in zip(curve.fpr[inside], curve.fnr[inside], strict=True)
    ]
    np.testing.assert_allclose(mus, 1.5, rtol=1e-6)


def test_parametric_curve_reaches_the_far_tails() -> None:
    curve = parametric_curve(stats.gamma(2, scale=5), stats.gamma(3, scale=5), smallest_rate=1e-9)
    assert curve.fpr.min() < 1e-8
    assert curve.fnr.min() < 1e-8


def test_empirical_curve_counts() -> None:
    curve = empirical_curve([1.0, 2.0, 3.0, 4.0], [2.5, 3.5])
    np.testing.assert_array_equal(curve.thresholds, [1.0, 2.0, 2.5, 3.0, 3.5, 4.0])
    np.testing.assert_allclose(curve.fpr, [0, 0, 0.5, 0.5, 1, 1])
    np.testing.assert_allclose(curve.fnr, [0.75, 0.5, 0.5, 0.25, 0.25, 0])
    assert len(curve) == 6
    assert curve.to_dict()["fpr"][2] == pytest.approx(0.5)


def _normal_quantile(rate: float) -> float:
    """Φ^{-1}(rate) by mpmath (50 digits), independent of scipy."""
    mpmath.mp.dps = 50
    return float(mpmath.sqrt(2) * mpmath.erfinv(2 * mpmath.mpf(rate) - 1))


def test_parametric_curve_points_by_hand() -> None:
    # Train N(0, 1), population N(3, 1): 200 rates per tail, geometric from 1e-12 to 1/2, at
    # the quantiles of both fits; each fit's median appears twice, so 4 * 200 - 2 thresholds.
    curve = parametric_curve(NormalFit(0.0, 1.0), NormalFit(3.0, 1.0))
    assert len(curve) == 798
    # The ends: the train fit's 1e-12 quantile and the population fit's 1 - 1e-12 quantile
    # (rel=1e-9: scipy's quantiles against mpmath's, far tighter than one grid step).
    assert curve.thresholds[0] == pytest.approx(_normal_quantile(1e-12), rel=1e-9)
    assert curve.thresholds[-1] == pytest.approx(3.0 - _normal_quantile(1e-12), rel=1e-9)
    assert curve.fnr[0] == pytest.approx(1.0, abs=1e-11)
    assert curve.fpr[-1] == pytest.approx(1.0, abs=1e-11)
    # At the population's own quantiles the FPR is the grid 1e-12 * (5e11)^(k / 199).
    grid = [1e-12 * math.exp(math.log(5e11) * k / 199) for k in range(200)]
    # Each grid rate is some point's FPR (rel=1e-9: rounding of the quantile and the CDF,
    # while neighbouring grid rates lie 14 % apart).
    nearest = np.array([np.min(np.abs(curve.fpr - rate)) / rate for rate in grid])
    assert nearest.max() < 1e-9


def test_two_points_per_tail_are_the_fewest() -> None:
    curve = parametric_curve(NormalFit(0.0, 1.0), NormalFit(3.0, 1.0), points_per_tail=2)
    assert len(curve) == 6  # 1e-12, the median and 1 - 1e-12 of each fit
    with pytest.raises(InvalidInputError, match=r"^points_per_tail must be an integer ≥ 2\."):
        parametric_curve(NormalFit(0.0, 1.0), NormalFit(3.0, 1.0), points_per_tail=1)


def test_a_smallest_rate_beyond_one_half_is_refused() -> None:
    with pytest.raises(InvalidInputError, match=r"^smallest_rate must be in"):
        parametric_curve(NormalFit(0.0, 1.0), NormalFit(3.0, 1.0), smallest_rate=0.6)


@pytest.mark.parametrize("name", ["train_losses", "population_losses"])
def test_empirical_curve_names_a_non_finite_input(name: str) -> None:
    losses = {"train_losses": [1.0, 2.0], "population_losses": [1.5, 2.5]}
    losses[name] = [1.0, float("nan")]
    with pytest.raises(InvalidInputError, match=rf"^{name} must be finite"):
        empirical_curve(**losses)
