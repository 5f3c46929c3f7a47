"""The sampling noise of the observed readings, checked against simulation and SciPy."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import beta, ks_2samp

from epsstar.statistics.readings.noise import advantage_noise, reading_noise, tpr_lower_limit
from epsstar.statistics.readings.readings import Readings, TprReading


def test_advantage_noise_is_the_level_of_the_one_sided_ks_statistic() -> None:
    """Two samples of one distribution exceed it in about 5 % of draws."""
    rng = np.random.default_rng(0)
    n, m = 400, 300
    level = advantage_noise(n, m, 0.95)
    draws = [
        ks_2samp(rng.normal(size=n), rng.normal(size=m), "less", method="asymp").statistic
        for _ in range(2000)
    ]
    share = float(np.mean(np.array(draws) > level))
    # Measured 0.0445. 2,000 draws give a standard error of 0.005, so [0.03, 0.065]
    # protects against a wrong formula (the two-sided level gives 0.021 on these draws),
    # not against the small error of Smirnov's limit at these sizes.
    assert 0.03 <= share <= 0.065


def test_tpr_lower_limit_is_the_clopper_pearson_beta_quantile() -> None:
    # Independent closed form: the one-sided lower limit is Beta(1 - c; k, n - k + 1).
    assert tpr_lower_limit(0.03, 1000, 0.95) == pytest.approx(beta.ppf(0.05, 30, 971), rel=1e-9)
    assert tpr_lower_limit(0.0, 1000, 0.95) == 0.0


def readings(advantage: float, allowed: float, tpr: float, tpr_allowed: float) -> Readings:
    return Readings(
        posterior_belief_bound=0.5,
        advantage_observed=advantage,
        advantage_bound=allowed,
        tpr_at_fpr=(TprReading(0.01, tpr, None, tpr_allowed),),
    )


def test_a_small_excess_at_epsilon_star_zero_is_noise() -> None:
    # dp-eps1-e5-0 of the demo: advantage 0.0039 against 0.0000, TPR 0.01023 against 0.01.
    noise = reading_noise(readings(0.0039, 0.0, 0.01023, 0.01), 32_561, 16_281, 0.95)
    assert noise.advantage_above
    assert not noise.advantage_beyond_noise
    assert noise.tpr_above == (True,)
    assert noise.tpr_beyond_noise == (False,)
    assert noise.any_within_noise
    assert not noise.any_beyond_noise


def test_a_large_excess_is_beyond_noise() -> None:
    noise = reading_noise(readings(0.2, 0.0, 0.2, 0.01), 2_000, 2_000, 0.95)
    assert noise.advantage_beyond_noise
    assert noise.tpr_beyond_noise == (True,)
    assert noise.any_beyond_noise
    assert not noise.any_within_noise


def test_values_within_their_allowed_ones_are_not_marked() -> None:
    noise = reading_noise(readings(0.1, 0.8, 0.005, 0.12), 600, 400, 0.95)
    assert not noise.any_above
