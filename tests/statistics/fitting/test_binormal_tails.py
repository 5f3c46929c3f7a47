"""The binormal tail model: normal shifts of a pooled fit's tails on the normal-score scale."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, special, stats

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.estimators.optimizer import parametric_supremum
from epsstar.statistics.fitting.binormal_tails import (
    BINORMAL_FIT_SHARE,
    fit_binormal_tails,
    truncated_normal_shift,
)
from epsstar.statistics.fitting.tails import fit_relative_tails
from epsstar.statistics.summaries.loss_sketch import sketch_losses
from tests.statistics.fitting.test_tails import _check_consistent


@pytest.mark.parametrize(
    ("mean", "cut", "size"), [(0.7, -0.5, 300), (-1.0, 0.5, 50), (2.0, -1.0, 20)]
)
def test_truncated_normal_shift_is_the_maximum_likelihood(
    mean: float, cut: float, size: int
) -> None:
    rng = np.random.default_rng(11)
    draws = rng.normal(mean, 1.0, 200 * size)
    scores = draws[draws <= cut][:size]

    def negative_log_likelihood(m: float) -> float:
        return float(np.sum(0.5 * (scores - m) ** 2) + scores.size * special.log_ndtr(cut - m))

    best = optimize.minimize_scalar(negative_log_likelihood, bounds=(-30, 30), method="bounded")
    # xatol of the bounded search is about 1e-5 of its bracket.
    assert truncated_normal_shift(scores, cut) == pytest.approx(best.x, abs=1e-4)


def test_truncated_normal_shift_recovers_the_mean_from_a_tail() -> None:
    draws = np.random.default_rng(0).normal(0.7, 1.0, 400_000)
    # 5 % of the draws lie below -0.95; sd of the estimate about 0.02 here.
    assert truncated_normal_shift(draws[draws <= -0.95], -0.95) == pytest.approx(0.7, abs=0.08)


def test_truncated_normal_shift_of_scores_at_the_cut_is_finite() -> None:
    shift = truncated_normal_shift(np.full(10, -1.0), -1.0)
    assert 1e5 < shift < 1e7


def test_binormal_tails_are_consistent_distributions() -> None:
    rng = np.random.default_rng(1)
    train, population = fit_binormal_tails(rng.gamma(2.0, 5.0, 3000), rng.gamma(4.0, 5.0, 3000))
    _check_consistent(train)
    _check_consistent(population)


def test_binormal_tails_follow_the_gaussian_mechanism_below_the_data() -> None:
    # N(0, 1) against N(1, 1), 100,000 a side: at δ = 1e-6 the supremum lies at a rate about
    # δ, a tenth of one record's worth. The binormal tails are the shape of this pair; on this
    # draw they read 0.22 below the truth (the pooled reference is a mixture, wider than
    # either side), the power tails 0.55 above it.
    rng = np.random.default_rng(2)
    train, population = rng.normal(0.0, 1.0, 100_000), rng.normal(1.0, 1.0, 100_000)
    truth = parametric_supremum(stats.norm(0.0, 1.0), stats.norm(1.0, 1.0), 1e-6).epsilon
    found = parametric_supremum(*fit_binormal_tails(train, population), 1e-6)
    assert found.epsilon == pytest.approx(truth, abs=0.3)
    assert min(found.fpr, found.fnr) < 1e-5


def test_binormal_tails_keep_each_sides_body() -> None:
    rng = np.random.default_rng(3)
    values = rng.normal(0.0, 1.0, 4000)
    binormal, _ = fit_binormal_tails(values, rng.normal(0.5, 1.0, 4000))
    power, _ = fit_relative_tails(values, rng.normal(0.5, 1.0, 4000))
    inside = np.quantile(values, [0.05, 0.5, 0.95])
    np.testing.assert_allclose(binormal.cdf(inside), power.cdf(inside), rtol=1e-12)


def test_identical_samples_give_no_leak() -> None:
    values = np.random.default_rng(5).gamma(2.0, 1.0, 1000)
    train, population = fit_binormal_tails(values, values[::-1].copy())
    assert train.shift_low == population.shift_low
    assert parametric_supremum(train, population, 1e-5).epsilon == pytest.approx(0.0, abs=1e-9)


def test_fit_share_is_checked_and_moves_the_fit() -> None:
    rng = np.random.default_rng(6)
    train, population = rng.normal(0.0, 1.0, 2000), rng.normal(0.5, 1.0, 2000)
    with pytest.raises(InvalidInputError, match="fit_share.*Found 0.7"):
        fit_binormal_tails(train, population, fit_share=0.7)
    narrow, _ = fit_binormal_tails(train, population, fit_share=0.05)
    wide, _ = fit_binormal_tails(train, population, fit_share=BINORMAL_FIT_SHARE)
    assert narrow.shift_low != wide.shift_low


def test_a_summary_without_the_fitted_share_is_refused_in_one_line() -> None:
    # A summary keeps its k most extreme values exactly; the shift needs a quarter of them.
    rng = np.random.default_rng(8)
    train, population = rng.normal(0.0, 1.0, 4000), rng.normal(0.5, 1.0, 4000)
    sketch = sketch_losses(train, 400, bins=512)
    with pytest.raises(
        InvalidInputError, match="keeps its 400 most extreme.*Found a request for 1001"
    ):
        fit_binormal_tails(sketch, population)
    assert fit_binormal_tails(sketch, population, fit_share=0.04)[0].n == 4000


def test_json_names_the_model_and_its_shifts() -> None:
    rng = np.random.default_rng(7)
    train, _ = fit_binormal_tails(rng.normal(0.0, 1.0, 500), rng.normal(1.0, 1.0, 500))
    record = train.to_dict()
    assert record["family"] == "binormal-tails"
    assert record["lower_shift"] == train.shift_low
    assert record["upper_shift"] == train.shift_high
    assert record["reference"]["family"] == "gpd-tails"  # type: ignore[index]
    assert "knots" not in record


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), shift=st.floats(0.0, 2.0))
def test_binormal_supremum_is_eq_7_at_its_rates(seed: int, shift: float) -> None:
    rng = np.random.default_rng(seed)
    train, population = fit_binormal_tails(rng.normal(-shift, 1, 400), rng.normal(0, 1, 400))
    found = parametric_supremum(train, population, 1e-5)
    if found.epsilon == 0.0:
        assert found.term == 0
        return
    # Eq. 7 of Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models",
    # at the reported rates: the named ratio's log, and no other ratio larger.
    t, eta, delta = found.fpr, found.fnr, 1e-5
    ratios = [(1 - delta - eta) / t, (1 - delta - t) / eta, (eta - delta) / (1 - t)]
    ratios.append((t - delta) / (1 - eta))
    assert found.epsilon == pytest.approx(np.log(ratios[found.term - 1]), rel=1e-7)
    assert max(ratios) == pytest.approx(ratios[found.term - 1], rel=1e-7)
