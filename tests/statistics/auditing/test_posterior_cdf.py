"""The posterior CDF of ε(α, β) against a Monte Carlo draw of the two Beta posteriors."""

from __future__ import annotations

import numpy as np
import pytest

from epsstar.statistics.auditing.many_runs.intervals import posterior_epsilon_cdf


@pytest.mark.parametrize("t", [0.5, 1.0, 2.0])
def test_posterior_cdf_matches_monte_carlo(t: float) -> None:
    fpr_post, fnr_post, delta = (3.0, 40.0), (5.0, 30.0), 1e-3
    rng = np.random.default_rng(11)
    alpha = rng.beta(*fpr_post, size=400_000)
    beta = rng.beta(*fnr_post, size=400_000)
    # ε(α, β) = max(log((1−δ−α)/β), log((1−δ−β)/α)), the privacy region's two lines
    eps = np.maximum(np.log((1 - delta - alpha) / beta), np.log((1 - delta - beta) / alpha))
    expected = float(np.mean(eps <= t))
    # 0.005: about 6 Monte Carlo standard errors (sd ≤ 0.5/√400000 ≈ 0.0008)
    assert posterior_epsilon_cdf(t, fpr_post, fnr_post, delta) == pytest.approx(expected, abs=0.005)
