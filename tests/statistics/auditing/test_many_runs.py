"""epsstar.statistics.auditing.many_runs.bounds and .intervals: the many-run bounds."""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import betaincc, betaincinv
from statsmodels.stats.proportion import confint_proportions_2indep

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.auditing.many_runs.bounds import (
    MANY_RUN_METHODS,
    audit_many_runs,
    many_run_bounds,
    split_runs,
)
from epsstar.statistics.auditing.many_runs.intervals import (
    bayesian_epsilon_lower_bound,
    log_katz_epsilon_lower_bound,
    posterior_epsilon_cdf,
)
from epsstar.statistics.bounds.from_counts import epsilon_lower_bound
from epsstar.statistics.bounds.held_out_bound import split_lower_bound
from epsstar.statistics.readings.conversions import gdp_epsilon, gdp_mu_lower_bound


@st.composite
def error_counts(draw: st.DrawFn, max_n: int = 3000) -> tuple[int, int, int, int]:
    negatives = draw(st.integers(min_value=1, max_value=max_n))
    positives = draw(st.integers(min_value=1, max_value=max_n))
    fp = draw(st.integers(min_value=0, max_value=negatives))
    fn = draw(st.integers(min_value=0, max_value=positives))
    return fp, negatives, fn, positives


def _posterior_epsilon_draws(
    counts: tuple[int, int, int, int], delta: float, draws: int, seed: int
) -> np.ndarray:
    fp, negatives, fn, positives = counts
    rng = np.random.default_rng(seed)
    fpr = rng.beta(1 + fp, 1 + negatives - fp, draws)
    fnr = rng.beta(1 + fn, 1 + positives - fn, draws)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.maximum((1 - delta - fpr) / fnr, (1 - delta - fnr) / fpr)
        return np.where(ratios > 1, np.log(ratios), 0.0)


# --- Bayesian ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("counts", "delta"),
    [
        ((0, 1000, 0, 1000), 0.0),
        ((5, 1000, 100, 1000), 1e-5),
        ((50, 500, 30, 500), 0.0),
        ((0, 100_000, 50_000, 100_000), 1e-5),
        ((3, 40, 2, 40), 1e-3),
    ],
)
def test_bayesian_bound_is_the_posterior_quantile(
    counts: tuple[int, int, int, int], delta: float
) -> None:
    # Monte Carlo of the same posterior: the share of 10^6 draws at or below the bound is
    # 1 − c = 0.05 up to 5 standard errors, 5·sqrt(0.05·0.95/10^6) ≈ 1.1e-3.
    bound = bayesian_epsilon_lower_bound(*counts, delta=delta, confidence=0.95)
    draws = _posterior_epsilon_draws(counts, delta, 1_000_000, seed=11)
    assert np.mean(draws <= bound) == pytest.approx(0.05, abs=1.1e-3)


def test_posterior_cdf_matches_monte_carlo_away_from_the_quantile() -> None:
    counts = (20, 400, 60, 400)
    draws = _posterior_epsilon_draws(counts, 1e-5, 1_000_000, seed=12)
    for t in (1.0, 1.5, 2.0):
        exact = posterior_epsilon_cdf(t, (21.0, 381.0), (61.0, 341.0), 1e-5)
        # 5 standard errors of a share of 10^6 draws, at most 5·0.5/1000.
        assert exact == pytest.approx(np.mean(draws <= t), abs=2.5e-3)


@pytest.mark.parametrize("counts", [(20500, 96939, 1964, 8690), (1999, 47029, 6906, 8112)])
def test_posterior_cdf_where_quadrature_reports_roundoff(counts: tuple[int, int, int, int]) -> None:
    # Counts where scipy's quad warns of roundoff (S_β steps sharply): the CDF at the bound
    # still matches a 2·10^5-point midpoint rule in u to 1e-7 (the rule's own error there is
    # about 2e-8: it shrinks from 1.4e-7 at 5·10^4 points to 2e-9 at 2·10^6).
    fp, negatives, fn, positives = counts
    fpr, fnr = (1 + fp, 1 + negatives - fp), (1 + fn, 1 + positives - fn)
    t = bayesian_epsilon_lower_bound(*counts, delta=1e-5)
    u = (np.arange(200_000) + 0.5) / 200_000
    x = betaincinv(*fpr, u)
    floor = np.maximum(1 - 1e-5 - np.exp(t) * x, (1 - 1e-5 - x) / np.exp(t))
    dense = np.mean(np.where(floor <= 0, 1.0, betaincc(*fnr, np.minimum(floor, 1.0))))
    assert posterior_epsilon_cdf(t, fpr, fnr, 1e-5) == pytest.approx(dense, abs=1e-7)
    assert dense == pytest.approx(0.05, abs=1e-7)


def test_bayesian_without_evidence_is_zero() -> None:
    assert bayesian_epsilon_lower_bound(50, 100, 50, 100) == 0.0


# --- log-Katz ----------------------------------------------------------------------------------


@settings(deadline=None, max_examples=200)
@given(error_counts(), st.sampled_from([0.8, 0.95, 0.99]))
def test_log_katz_at_zero_delta_is_statsmodels(
    counts: tuple[int, int, int, int], confidence: float
) -> None:
    # statsmodels' Katz log interval ("log-adjusted") of each direction's ratio; 1e-9
    # relative covers the two evaluation orders of the same formula.
    fp, negatives, fn, positives = counts
    lows = [
        confint_proportions_2indep(
            right,
            right_n,
            wrong,
            wrong_n,
            compare="ratio",
            method="log-adjusted",
            alpha=1 - confidence,
        )[0]
        for right, right_n, wrong, wrong_n in (
            (positives - fn, positives, fp, negatives),
            (negatives - fp, negatives, fn, positives),
        )
    ]
    expected = max(0.0, *(float(np.log(low)) for low in lows))
    got = log_katz_epsilon_lower_bound(fp, negatives, fn, positives, confidence=confidence)
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-12)


@settings(deadline=None, max_examples=100)
@given(error_counts(), st.sampled_from([1e-6, 1e-3, 0.1]))
def test_log_katz_falls_with_delta(counts: tuple[int, int, int, int], delta: float) -> None:
    assert log_katz_epsilon_lower_bound(*counts, delta=delta) <= (
        log_katz_epsilon_lower_bound(*counts) + 1e-12
    )


# --- the record --------------------------------------------------------------------------------


def test_record_gathers_the_four_bounds() -> None:
    counts = (5, 1000, 100, 1000)
    bounds = many_run_bounds(*counts, delta=1e-5, confidence=0.95)
    assert bounds.epsilon_clopper_pearson == epsilon_lower_bound(*counts, delta=1e-5).epsilon
    assert bounds.mu_lower == gdp_mu_lower_bound(*counts)
    assert bounds.epsilon_gdp == gdp_epsilon(1e-5, bounds.mu_lower)
    assert bounds.epsilon_bayesian == bayesian_epsilon_lower_bound(*counts, delta=1e-5)
    assert bounds.epsilon_log_katz == log_katz_epsilon_lower_bound(*counts, delta=1e-5)
    table = bounds.table()
    assert tuple(row.method for row in table) == MANY_RUN_METHODS
    record = json.loads(json.dumps(bounds.to_dict()))
    assert [row["method"] for row in record["bounds"]] == list(MANY_RUN_METHODS)
    assert record["bounds"][0]["epsilon_lower"] == bounds.epsilon_clopper_pearson


def test_gdp_needs_far_fewer_runs() -> None:
    # The point of auditing in μ-GDP: with no error in 100 runs each way, Clopper–Pearson is
    # capped near log(1/u) while μ⁻ read at δ = 1e-5 goes well past it.
    bounds = many_run_bounds(0, 100, 0, 100, delta=1e-5)
    assert bounds.epsilon_gdp is not None
    assert bounds.epsilon_gdp > 2 * bounds.epsilon_clopper_pearson


def test_audit_from_scores_counts_the_held_out_half() -> None:
    rng = np.random.default_rng(3)
    runs = 2000
    # The canary's loss: lower in runs trained with it (μ = 2 apart, unit spread).
    with_canary = rng.standard_normal(runs) - 2.0
    without_canary = rng.standard_normal(runs)
    bounds = audit_many_runs(with_canary, without_canary, delta=1e-5, seed=5)
    expected = split_lower_bound(with_canary, without_canary, delta=1e-5, seed=5)
    assert bounds.epsilon_clopper_pearson == expected.epsilon
    assert (bounds.threshold, bounds.direction) == (expected.threshold, "members_lower")
    assert bounds.positives == bounds.negatives == runs - runs // 2
    # A μ = 2 Gaussian: its μ⁻ cannot exceed 2 (valid at 95 %; here comfortably).
    assert 0.5 < bounds.mu_lower <= 2.0
    assert bounds.epsilon_gdp is not None
    assert bounds.epsilon_gdp <= gdp_epsilon(1e-5, 2.0)


def test_split_runs_is_the_split_the_audit_counts_on() -> None:
    rng = np.random.default_rng(4)
    with_canary = rng.standard_normal(301) + 1.5
    without_canary = rng.standard_normal(200)
    split = split_runs(with_canary, without_canary, seed=9)
    assert (split.selection_with.size, split.evaluation_with.size) == (150, 151)
    assert (split.selection_without.size, split.evaluation_without.size) == (100, 100)
    assert np.array_equal(
        np.sort(np.concatenate([split.selection_with, split.evaluation_with])),
        np.sort(with_canary),
    )
    bounds = audit_many_runs(with_canary, without_canary, delta=1e-5, seed=9)
    assert bounds.direction == "members_higher"
    # Count the chosen test's errors on the evaluation halves by hand.
    assert bounds.false_negatives == int(np.sum(split.evaluation_with <= bounds.threshold))
    assert bounds.false_positives == int(np.sum(split.evaluation_without > bounds.threshold))


def test_bad_input_is_refused() -> None:
    with pytest.raises(InvalidInputError, match=r"prior must be two positive numbers"):
        many_run_bounds(1, 10, 1, 10, delta=0.0, prior=(0.0, 1.0))
    with pytest.raises(InvalidInputError, match=r"false_positives must be an integer in"):
        many_run_bounds(11, 10, 1, 10, delta=0.0)
    with pytest.raises(InvalidInputError, match=r"scores_with needs at least 2 values. Found 1."):
        audit_many_runs([1.0], [1.0, 2.0], delta=0.0)


# --- every setting reaches the record (mutation testing: docs/mutation.md) --------------------


def _cp_upper(count: int, n: int, confidence: float) -> float:
    """The two-sided Clopper–Pearson upper end, by hand: the (1 + c)/2 quantile of
    Beta(count + 1, n − count), 1 when count = n."""
    if count == n:
        return 1.0
    return float(stats.beta.ppf((1.0 + confidence) / 2.0, count + 1, n - count))


def test_a_non_default_confidence_delta_and_prior_reach_every_bound() -> None:
    fp, n_neg, fn, n_pos = 3, 200, 5, 200
    bounds = many_run_bounds(fp, n_neg, fn, n_pos, delta=1e-3, confidence=0.8, prior=(2.0, 3.0))
    assert (bounds.delta, bounds.confidence, bounds.prior) == (1e-3, 0.8, (2.0, 3.0))
    alpha, beta = _cp_upper(fp, n_neg, 0.8), _cp_upper(fn, n_pos, 0.8)
    # Nasr et al. 2021's eq. 5 and Nasr et al. 2023's mu from the same upper bounds, by hand;
    # rel=1e-9 guards against a bound computed at the default 95 % (there they are 7–8 % lower).
    epsilon = max(math.log((1.0 - 1e-3 - alpha) / beta), math.log((1.0 - 1e-3 - beta) / alpha))
    assert bounds.epsilon_clopper_pearson == pytest.approx(epsilon, rel=1e-9)
    mu = float(stats.norm.ppf(1.0 - alpha) - stats.norm.ppf(beta))
    assert bounds.mu_lower == pytest.approx(mu, rel=1e-9)
    assert bounds.epsilon_gdp == pytest.approx(gdp_epsilon(1e-3, mu), rel=1e-9)
    # The Bayesian and log-Katz bounds (checked against peers above) at the same settings.
    assert bounds.epsilon_bayesian == bayesian_epsilon_lower_bound(
        fp, n_neg, fn, n_pos, delta=1e-3, confidence=0.8, prior=(2.0, 3.0)
    )
    assert bounds.epsilon_log_katz == log_katz_epsilon_lower_bound(
        fp, n_neg, fn, n_pos, delta=1e-3, confidence=0.8
    )
    default = many_run_bounds(fp, n_neg, fn, n_pos, delta=1e-3)
    assert bounds.epsilon_bayesian != bayesian_epsilon_lower_bound(
        fp, n_neg, fn, n_pos, delta=1e-3, confidence=0.8
    )
    assert bounds.epsilon_bayesian != default.epsilon_bayesian
    assert bounds.epsilon_log_katz != default.epsilon_log_katz


def test_the_table_rows_name_each_method_its_bound_and_its_promise() -> None:
    bounds = many_run_bounds(3, 200, 5, 200, delta=1e-3)
    assert bounds.epsilon_gdp is not None
    assert [(row.method, row.epsilon_lower, row.guarantee) for row in bounds.table()] == [
        ("clopper_pearson", bounds.epsilon_clopper_pearson, "exact"),
        ("gdp_clopper_pearson", bounds.epsilon_gdp, "exact for Gaussian curves"),
        ("bayesian_beta", bounds.epsilon_bayesian, "credible (posterior)"),
        ("log_katz", bounds.epsilon_log_katz, "asymptotic"),
    ]


def test_delta_zero_gives_no_gdp_epsilon() -> None:
    # At delta = 0 every mu > 0 means epsilon = infinity: the record says None, not a value.
    assert many_run_bounds(3, 200, 5, 200, delta=0.0).epsilon_gdp is None
    scores = np.random.default_rng(0)
    ran = audit_many_runs(scores.normal(0, 1, 30), scores.normal(1, 1, 30), delta=0.0)
    assert ran.delta == 0.0
    assert ran.epsilon_gdp is None


def _overlapping_runs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(0.0, 1.0, 30), rng.normal(1.0, 1.0, 30)


def test_audit_many_runs_passes_its_settings_on() -> None:
    with_canary, without_canary = _overlapping_runs()
    ran = audit_many_runs(
        with_canary, without_canary, delta=1e-5, confidence=0.5, seed=0, prior=(2.0, 3.0)
    )
    assert (ran.confidence, ran.prior) == (0.5, (2.0, 3.0))
    # On these runs the test chosen at 50 % differs from the one chosen at 95 %.
    chosen = split_lower_bound(with_canary, without_canary, delta=1e-5, confidence=0.5, seed=0)
    default = split_lower_bound(with_canary, without_canary, delta=1e-5, seed=0)
    assert chosen.threshold != default.threshold
    assert (ran.threshold, ran.false_positives, ran.false_negatives) == (
        chosen.threshold,
        chosen.false_positives,
        chosen.false_negatives,
    )


def test_the_default_seed_is_zero_in_both_functions() -> None:
    # A run without a seed is reproduced by split_runs without a seed (and by seed 0).
    with_canary, without_canary = _overlapping_runs()
    ran = audit_many_runs(with_canary, without_canary, delta=1e-5)
    assert ran == audit_many_runs(with_canary, without_canary, delta=1e-5, seed=0)
    assert ran != audit_many_runs(with_canary, without_canary, delta=1e-5, seed=1)
    split, seeded = (
        split_runs(with_canary, without_canary),
        split_runs(with_canary, without_canary, seed=0),
    )
    np.testing.assert_array_equal(split.selection_with, seeded.selection_with)
    other = split_runs(with_canary, without_canary, seed=1)
    assert not np.array_equal(split.selection_with, other.selection_with)


_SPLIT_OR_AUDIT: list[Callable[[list[float], list[float]], object]] = [
    lambda with_canary, without_canary: split_runs(with_canary, without_canary),
    lambda with_canary, without_canary: audit_many_runs(with_canary, without_canary, delta=1e-5),
]


@pytest.mark.parametrize("function", _SPLIT_OR_AUDIT, ids=["split_runs", "audit_many_runs"])
def test_two_runs_a_side_are_the_fewest_accepted(
    function: Callable[[list[float], list[float]], object],
) -> None:
    function([0.0, 1.0], [2.0, 3.0])
    with pytest.raises(InvalidInputError, match=r"^scores_with needs at least 2 values\. Found 1"):
        function([0.0], [2.0, 3.0])
    with pytest.raises(
        InvalidInputError, match=r"^scores_without needs at least 2 values\. Found 1"
    ):
        function([0.0, 1.0], [2.0])
