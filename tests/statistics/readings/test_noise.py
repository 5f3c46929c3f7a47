"""The sampling noise of the observed readings, checked against simulation and SciPy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import beta, ks_2samp

from epsstar.statistics.readings.noise import (
    advantage_noise,
    fpr_upper_limit,
    reading_noise,
    tpr_lower_limit,
)
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
    noise = reading_noise(
        readings(0.0039, 0.0, 0.01023, 0.01), 32_561, 16_281, 0.95, epsilon=0.0, delta=0.0
    )
    assert noise.advantage_above
    assert not noise.advantage_beyond_noise
    assert noise.tpr_above == (True,)
    assert noise.tpr_beyond_noise == (False,)
    assert noise.any_within_noise
    assert not noise.any_beyond_noise


def test_a_large_excess_is_beyond_noise() -> None:
    noise = reading_noise(readings(0.2, 0.0, 0.2, 0.01), 2_000, 2_000, 0.95, epsilon=0.0, delta=0.0)
    assert noise.advantage_beyond_noise
    assert noise.tpr_beyond_noise == (True,)
    assert noise.any_beyond_noise
    assert not noise.any_within_noise


def test_values_within_their_allowed_ones_are_not_marked() -> None:
    allowed = readings(0.1, 0.8, 0.005, 0.12)  # 0.12 = e^ε·0.01 with ε = log 12, δ = 0
    noise = reading_noise(allowed, 600, 400, 0.95, epsilon=math.log(12), delta=0.0)
    assert not noise.any_above


def test_fpr_upper_limit_is_the_clopper_pearson_beta_quantile() -> None:
    # Independent closed form: the one-sided upper limit is Beta(c; j + 1, m - j), with j the
    # most non-members the test may flag (1 % of 16,281 rounds down to 162).
    assert fpr_upper_limit(0.01, 16_281, 0.975) == pytest.approx(
        beta.ppf(0.975, 163, 16_119), rel=1e-9
    )
    assert fpr_upper_limit(1.0, 100, 0.95) == 1.0


def test_the_fpr_noise_counts_too() -> None:
    """At the demo's sizes and ε* = 0, an observed TPR of 0.0115 at 1 % FPR has a 95 % lower
    limit of 0.01053, above the allowed 0.01: read against the nominal FPR alone it looked
    beyond noise. The test's FPR of 162 of 16,281 non-members may be as high as 0.01160
    (upper limit at 97.5 %), which allows that TPR: within noise. At 0.013 the TPR's lower
    limit (0.01179 at 97.5 %) clears the FPR's upper limit: beyond noise."""
    delta = 3e-6
    n, m = 32_561, 16_281
    tprs = (TprReading(0.01, 0.0115, None, 0.01 + delta), TprReading(0.01, 0.013, None, 0.01))
    readings = Readings(0.5, 0.0, delta, tprs)
    noise = reading_noise(readings, n, m, 0.95, epsilon=0.0, delta=delta)
    assert noise.tpr_above == (True, True)
    assert noise.tpr_beyond_noise == (False, True)
    # Independent check with SciPy's beta quantiles: both limits at 1 - 0.05 / 2.
    high = beta.ppf(0.975, 163, m - 162)
    assert noise.fpr_upper_limits[0] == pytest.approx(high, rel=1e-9)
    assert noise.tpr_allowed_at_limit[0] == pytest.approx(high + delta, rel=1e-9)
    low = beta.ppf(0.025, round(0.0115 * n), n - round(0.0115 * n) + 1)
    assert noise.tpr_lower_limits[0] == pytest.approx(low, rel=1e-9)
    assert beta.ppf(0.05, round(0.0115 * n), n - round(0.0115 * n) + 1) > 0.01 + delta
