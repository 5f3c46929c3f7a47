"""Zhang–Stephens GPD estimates on tiny samples, against the estimator written out here."""

from __future__ import annotations

import math

import numpy as np
import pytest

from epsstar.statistics.fitting.tails import fit_generalized_pareto


def _zhang_stephens(excesses: np.ndarray) -> tuple[float, float]:
    """Zhang & Stephens (2009): θ grid from the first quartile, posterior-mean θ, then k."""
    y = np.sort(excesses)
    n = y.size
    m = 30 + int(math.sqrt(n))
    quartile = y[math.floor(n / 4 + 0.5) - 1]  # the paper's 1-based index ⌊n/4 + ½⌋
    thetas = [1 / y[-1] + (1 - math.sqrt(m / (j - 0.5))) / (3 * quartile) for j in range(1, m + 1)]
    ks = [-float(np.mean(np.log1p(-t * y))) for t in thetas]
    profile = [n * (math.log(t / k) + k - 1) for t, k in zip(thetas, ks, strict=True)]
    top = max(profile)
    weights = [math.exp(p - top) for p in profile]
    theta = sum(t * w for t, w in zip(thetas, weights, strict=True)) / sum(weights)
    xi = float(np.mean(np.log1p(-theta * y)))
    return xi, -xi / theta


@pytest.mark.parametrize("n", [5, 6, 9])
def test_small_samples_use_the_first_quartile(n: int) -> None:
    excesses = np.random.default_rng(n).exponential(1.0, n)
    fit = fit_generalized_pareto(excesses)
    xi, sigma = _zhang_stephens(excesses)
    assert -1.0 < xi < 1.0  # inside SHAPE_RANGE, so no clipping rule applies
    # 1e-9 relative: the same sums in another order; the shapes here stay inside the clip
    assert (fit.xi, fit.sigma) == pytest.approx((xi, sigma), rel=1e-9)
