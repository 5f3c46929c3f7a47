"""Goodness-of-fit tests: calibration under the null and power against a wrong family."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from epsstar.exceptions import InsufficientDataError
from epsstar.statistics.fitting import NormalFit
from epsstar.statistics.fitting.goodness_of_fit import (
    assess_fit,
    holdout_ks_test,
    ks_table,
    lilliefors_test,
)


def test_holdout_ks_is_calibrated_for_a_correct_family() -> None:
    rng = np.random.default_rng(0)
    pvalues = [
        holdout_ks_test(rng.normal(2, 3, 2000), NormalFit.fit, n_samples=500, rng=rng).pvalue
        for _ in range(200)
    ]
    # Under the null the rejection rate at 5 % is about 5 % (binomial sd ≈ 1.5 %).
    assert 0.0 <= np.mean(np.array(pvalues) < 0.05) <= 0.11


def test_tests_reject_a_wrong_family() -> None:
    values = np.random.default_rng(1).exponential(1.0, 5000)
    result = assess_fit(values, "normal", NormalFit.fit)
    assert result.poor_fit
    assert result.ks.pvalue < 1e-6
    assert result.lilliefors_pvalue <= 0.001
    assert any("Lilliefors" in reason for reason in result.describe_rejections())


@pytest.mark.parametrize(
    "values",
    [
        np.random.default_rng(2).normal(size=500),
        np.random.default_rng(2).exponential(size=300),
        np.random.default_rng(2).standard_t(5, size=2000),
    ],
    ids=["normal", "exponential", "student-t"],
)
def test_lilliefors_matches_statsmodels(values: np.ndarray) -> None:
    from statsmodels.stats.diagnostic import lilliefors

    statistic, pvalue = lilliefors_test(values)
    assert (statistic, pvalue) == lilliefors(values, dist="norm", pvalmethod="table")
    # The statistic is the KS distance to the Normal with the sample's mean and sd.
    fitted = stats.norm(values.mean(), values.std(ddof=1))
    assert statistic == pytest.approx(stats.kstest(values, fitted.cdf).statistic, rel=1e-12)


def test_lilliefors_accepts_normal_data_and_rejects_skewed_data() -> None:
    rng = np.random.default_rng(2)
    assert lilliefors_test(rng.normal(size=500))[1] > 0.05
    assert lilliefors_test(rng.exponential(size=500))[1] <= 0.001


def test_evaluation_set_shrinks_for_small_data_and_has_a_floor() -> None:
    rng = np.random.default_rng(3)
    assert holdout_ks_test(rng.normal(size=300), NormalFit.fit, rng=rng).n_samples == 150
    with pytest.raises(InsufficientDataError, match="at least 50 values. Found 40"):
        holdout_ks_test(rng.normal(size=40), NormalFit.fit, rng=rng)


def test_ks_table_covers_components_and_sample_sizes() -> None:
    values = np.random.default_rng(4).normal(size=1500)
    table = ks_table(values, components=(1, 2), sample_sizes=(100, 200))
    assert [(t.n_samples, t.n_components) for t in table] == [
        (100, 1),
        (100, 2),
        (200, 1),
        (200, 2),
    ]
    assert all(0 <= t.pvalue <= 1 for t in table)
