"""Summarised losses: mergeable summaries, and the estimator's statistics from them."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from epsstar.audit.data.checks import TableScan, shared_rows
from epsstar.exceptions import InvalidInputError
from epsstar.statistics.bounds.held_out_bound import split_lower_bound
from epsstar.statistics.bounds.leak_test import held_out_leak_test
from epsstar.statistics.estimators.estimator import estimate, estimate_at_deltas
from epsstar.statistics.estimators.methods import Bootstrap, method_config
from epsstar.statistics.summaries.loss_summary import (
    HELD_OUT_STREAM,
    SummaryPlan,
    merge_summaries,
    summarise_losses,
)


def _summaries(
    train: np.ndarray, population: np.ndarray, *, whole: bool = False, seed: int = 0
) -> tuple[object, object]:
    plans = SummaryPlan.for_rows(train.size, population.size, seed=seed)
    if whole:  # every value kept: the exact statistics with the summaries' halves
        plans = tuple(dataclasses.replace(p, k=train.size + population.size) for p in plans)
    return summarise_losses(train, plans[0]), summarise_losses(population, plans[1])


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 3000),
    cuts=st.lists(st.integers(1, 2999), max_size=5),
)
def test_partition_summaries_merge_into_the_summary_of_the_whole(
    seed: int, n: int, cuts: list[int]
) -> None:
    rng = np.random.default_rng(seed)
    losses = np.round(rng.standard_t(3, size=n), 2)
    plan = SummaryPlan(seed, 1, k=40, n_splits=2, sample_rate=0.3)
    whole = summarise_losses(losses, plan)
    points = sorted({c for c in cuts if c < n})
    offsets = [0, *points]
    parts = [
        summarise_losses(part, plan, offset=offset)
        for part, offset in zip(np.split(losses, points), offsets, strict=True)
    ]
    merged = merge_summaries(parts)
    assert merged.n == whole.n == n
    for found, expected in zip(
        [s for pair in (*merged.crossfit, merged.held_out) for s in pair],
        [s for pair in (*whole.crossfit, whole.held_out) for s in pair],
        strict=True,
    ):
        np.testing.assert_array_equal(found.low, expected.low)
        np.testing.assert_array_equal(found.high, expected.high)
        np.testing.assert_array_equal(found.counts, expected.counts)
    np.testing.assert_array_equal(merged.sample, whole.sample)
    assert (merged.atoms is None) == (whole.atoms is None)
    if whole.atoms is not None and merged.atoms is not None:
        np.testing.assert_array_equal(merged.atoms[0], whole.atoms[0])
        np.testing.assert_array_equal(merged.atoms[1], whole.atoms[1])


def test_halves_are_random_halves_chosen_by_position() -> None:
    plan = SummaryPlan(5, 0, k=10)
    first = plan.halves(HELD_OUT_STREAM, 0, 0, 1_000_000)
    assert abs(first.mean() - 0.5) < 0.002  # 4 standard errors
    np.testing.assert_array_equal(plan.halves(HELD_OUT_STREAM, 0, 1000, 10), first[1000:1010])
    other_side = dataclasses.replace(plan, side=1).halves(HELD_OUT_STREAM, 0, 0, 1_000_000)
    other_seed = dataclasses.replace(plan, seed=6).halves(HELD_OUT_STREAM, 0, 0, 1_000_000)
    for other in (other_side, other_seed):  # independent of each other
        assert abs(np.mean(first == other) - 0.5) < 0.002
    sampled = dataclasses.replace(plan, sample_rate=0.01).sampled(0, 1_000_000)
    assert abs(sampled.mean() - 0.01) < 0.0005


def test_estimates_from_summaries_agree_with_every_loss() -> None:
    # Independent check: the same statistics computed with sketches holding every value.
    rng = np.random.default_rng(3)
    train, population = rng.logistic(-0.4, 1.0, 30_000), rng.logistic(0.0, 1.0, 300_000)
    summaries = _summaries(train, population)
    exact = _summaries(train, population, whole=True)
    assert summaries[1].whole.n > summaries[1].whole.k  # the body is on the grid
    for method in ("tails-tested", "tails", "tails-crossfit", "empirical"):
        config = method_config(method)
        deltas = (1e-6, 1e-3)
        found = estimate_at_deltas(*summaries, config, deltas, seed=0)
        expected = estimate_at_deltas(*exact, config, deltas, seed=0)
        for a, b in zip(found, expected, strict=True):
            assert a.epsilon == pytest.approx(b.epsilon, abs=1e-4), method
            assert a.n_population == 300_000
            assert a.epsilon > 0.2


def test_held_out_tests_count_exactly_on_the_halves() -> None:
    rng = np.random.default_rng(4)
    train, population = rng.logistic(-0.3, 1.0, 20_000), rng.logistic(0.0, 1.0, 200_000)
    summaries = _summaries(train, population)
    bound = split_lower_bound(*summaries, delta=1e-5)
    leak = held_out_leak_test(*summaries)
    plans = [s.plan for s in summaries]  # type: ignore[attr-defined]
    evaluation = [
        values[~plan.halves(HELD_OUT_STREAM, 0, 0, values.size)]
        for values, plan in zip((train, population), plans, strict=True)
    ]
    members, others = evaluation
    assert bound.direction == leak.direction == "members_lower"
    assert bound.false_positives == np.count_nonzero(others <= bound.threshold)
    assert bound.false_negatives == np.count_nonzero(members > bound.threshold)
    assert (bound.negatives, bound.positives) == (others.size, members.size)
    assert leak.true_positives == np.count_nonzero(members <= leak.threshold)
    assert leak.p_value < 1e-10
    assert bound.epsilon > 0.1


def test_losses_on_a_few_values_get_the_exact_atoms_estimate() -> None:
    rng = np.random.default_rng(5)
    train = rng.choice([0.1, 0.5, 2.0], p=[0.7, 0.2, 0.1], size=50_000)
    population = rng.choice([0.1, 0.5, 2.0, 4.0], p=[0.5, 0.2, 0.2, 0.1], size=400_000)
    summaries = _summaries(train, population)
    found = estimate(*summaries, method_config("empirical"), delta=1e-6)
    expected = estimate(train, population, method_config("empirical"), delta=1e-6)
    assert found.epsilon == expected.epsilon
    # The default on summaries whose halves cannot count every atom: the exact hull of the
    # whole data (the held losses' plug-in value), not cross-fitted, and still tested.
    found = estimate(*summaries, method_config("tails-tested"), delta=1e-6)
    expected = estimate(train, population, method_config("tails-tested"), delta=1e-6)
    assert found.method == expected.method == "atoms-tested"
    assert found.leak_test is not None
    assert found.leak_test.p_value < 1e-10
    assert found.epsilon == expected.plug_in_epsilon
    assert found.note is not None
    assert "not cross-fitted" in found.note


def test_what_needs_every_loss_is_refused_for_summaries() -> None:
    rng = np.random.default_rng(6)
    summaries = _summaries(rng.normal(size=2000), rng.normal(size=2000))
    with pytest.raises(InvalidInputError, match="the parametric method needs every loss"):
        estimate(*summaries, method_config("parametric"), delta=1e-5)
    with pytest.raises(InvalidInputError, match="not available for summarised losses"):
        estimate(*summaries, method_config("tails"), delta=1e-5, interval=Bootstrap(0.9, 10))


def test_shared_rows_are_estimated_from_a_sample_kept_alike_on_both_sides() -> None:
    rng = np.random.default_rng(7)
    train = rng.integers(0, 2**63, size=200_000, dtype=np.uint64)
    population = rng.integers(0, 2**63, size=400_000, dtype=np.uint64)
    population[:20_000] = train[:20_000]  # 5 % of the population rows are training rows
    counts = np.array([1, 1])
    scans = [TableScan(h, counts).sampled(0.25) for h in (train, population)]
    assert scans[1].rows == 400_000
    assert abs(scans[1].hashes.size / 400_000 - 0.25) < 0.005
    found = shared_rows(*scans)
    assert abs(found - 20_000) < 4 * np.sqrt(20_000 * 0.75 / 0.25)
    assert shared_rows(TableScan(train, counts), TableScan(population, counts)) == 20_000


def test_held_out_tests_from_summaries_are_those_of_every_loss_with_the_same_halves() -> None:
    # Three training records far in the upper tail decide the leak: a test at one of their
    # losses counts exactly on the population's sketches, so it is kept as it is.
    rng = np.random.default_rng(8)
    train = np.concatenate([rng.logistic(0.0, 1.0, 597), [9.0, 9.5, 10.0]])
    population = rng.logistic(0.0, 1.0, 400_000)
    plans = SummaryPlan.for_rows(train.size, population.size, seed=0)
    summarised = summarise_losses(population, plans[1])
    whole = summarise_losses(population, dataclasses.replace(plans[1], k=population.size))
    for test in (split_lower_bound, held_out_leak_test):
        kwargs = {"delta": 1e-6} if test is split_lower_bound else {}
        found = test(train, summarised, **kwargs)  # type: ignore[operator]
        expected = test(train, whole, **kwargs)  # type: ignore[operator]
        assert found == expected
