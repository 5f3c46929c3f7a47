"""The Lilliefors statistic of a fit assessment, against the KS distance written out."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from epsstar.statistics.fitting import NormalFit
from epsstar.statistics.fitting.goodness_of_fit import assess_fit, lilliefors_test


def _ks_distance_to_fitted_normal(values: np.ndarray) -> float:
    """sup |F_n − Φ((x − mean)/sd)| with the sample sd (ddof = 1), as Lilliefors defines it."""
    x = np.sort(values)
    n = x.size
    cdf = stats.norm.cdf(x, x.mean(), x.std(ddof=1))
    return float(max(np.max(np.arange(1, n + 1) / n - cdf), np.max(cdf - np.arange(n) / n)))


def test_lilliefors_statistic_is_the_ks_distance() -> None:
    values = np.random.default_rng(8).gamma(2.0, 1.0, 300)
    expected = _ks_distance_to_fitted_normal(values)
    statistic, pvalue = lilliefors_test(values)
    # 1e-12: the same maximum of 600 differences, computed twice
    assert statistic == pytest.approx(expected, abs=1e-12)
    assert 0.0 < pvalue <= 0.05  # a skewed gamma sample of 300 is plainly not normal
    fit = assess_fit(values, "normal", NormalFit.fit, n_samples=200)
    assert fit.lilliefors_statistic == pytest.approx(expected, abs=1e-12)
