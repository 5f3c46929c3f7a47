"""Trade-off curves from fitted and empirical CDFs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

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
