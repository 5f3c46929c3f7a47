"""Losses held in memory (``LossValues``) read as the estimators read a summary or a sketch."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.estimators.empirical import empirical_supremum
from epsstar.statistics.estimators.estimator import epsilon_star
from epsstar.statistics.fitting.tails import TailedEmpirical
from epsstar.statistics.summaries.loss_sketch import as_sample, pooled, sketch_losses
from epsstar.statistics.summaries.loss_summary import (
    SummaryPlan,
    as_losses,
    summarise_losses,
)
from epsstar.statistics.summaries.loss_values import LossValues, sorted_body

losses = st.lists(
    st.floats(-50, 50, allow_nan=False).map(lambda x: round(x, 1)),  # ties on purpose
    min_size=1,
    max_size=300,
)


@settings(max_examples=60, deadline=None)
@given(values=losses, thresholds=st.lists(st.floats(-60, 60, allow_nan=False), max_size=20))
def test_counts_quantiles_and_extremes_are_those_of_the_values(
    values: list[float], thresholds: list[float]
) -> None:
    held = LossValues(np.array(values))
    x = np.array(values)
    taus = np.concatenate([thresholds, values])  # at the values too: a count includes ties
    counts, exact = held.count_below(taus)
    # Independent count: a comparison per value, not a search of the sorted values.
    np.testing.assert_array_equal(counts, [(x <= t).sum() for t in taus])
    assert exact.all()
    assert held.countable(taus).all()
    np.testing.assert_array_equal(held.floor_edges(taus), taus)
    # The inverted-CDF quantile: the smallest value whose empirical CDF reaches the level
    # (levels chosen so that no level times n is a whole number).
    levels = np.array([0.0123, 0.4567, 0.987])
    np.testing.assert_array_equal(
        held.quantiles(levels), [min(v for v in values if (x <= v).mean() >= q) for q in levels]
    )
    m = len(values) // 2
    np.testing.assert_array_equal(held.lowest(m), np.sort(x)[:m])
    np.testing.assert_array_equal(held.highest(m), np.sort(x)[x.size - m :])
    distinct, repeats = held.atoms
    assert dict(zip(distinct.tolist(), repeats.tolist(), strict=True)) == {
        v: values.count(v) for v in set(values)
    }
    assert held.end_repeats() == (values.count(min(values)), values.count(max(values)))
    assert held.n == len(values)
    assert held.values is not None
    assert held.values is not None
    np.testing.assert_array_equal(np.asarray(held), x)


def test_a_request_beyond_the_values_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="there are 3 losses. Found a request for 4."):
        LossValues(np.arange(3.0)).lowest(4)


def test_halves_are_a_seeded_split_of_every_value() -> None:
    values = np.arange(101.0)
    first, second = LossValues(values).held_out_halves(np.random.default_rng(3))
    assert (first.n, second.n) == (50, 51)
    np.testing.assert_array_equal(np.sort(np.concatenate([first.values, second.values])), values)
    again = LossValues(values).held_out_halves(np.random.default_rng(3))
    np.testing.assert_array_equal(again[0].values, first.values)
    a, b = LossValues(values).crossfit_halves(0, np.random.default_rng(3))
    np.testing.assert_array_equal(a.values, first.values)
    np.testing.assert_array_equal(b.values, second.values)


def test_a_sketch_holding_every_value_reads_like_the_values() -> None:
    rng = np.random.default_rng(4)
    values = np.round(rng.gamma(2.0, 5.0, 400), 2)
    complete = sketch_losses(values, k=values.size)
    assert complete.complete
    held = LossValues(values)
    for k in (5, 20, 60):
        for found, expected in zip(complete.body(k), held.body(k), strict=True):
            np.testing.assert_array_equal(found, expected)
    assert complete.countable(np.array([-1.0, 10.0, 1e3])).all()
    fits = TailedEmpirical.fit(complete), TailedEmpirical.fit(values)
    np.testing.assert_array_equal(fits[0].knots, fits[1].knots)
    np.testing.assert_array_equal(fits[0].levels, fits[1].levels)
    assert fits[0].lower == fits[1].lower
    assert fits[0].upper == fits[1].upper


def test_an_incomplete_sketch_counts_only_well_inside_its_tails() -> None:
    values = np.random.default_rng(5).normal(size=5000)
    sketch = sketch_losses(values, k=100)
    low, high = np.sort(values)[[10, 80]]
    inside = sketch.countable(np.array([low, high, 0.0]))
    # The 11th value is well inside the kept tail; the 81st has more than k/2 values at or
    # below it, and 0.0 (a grid edge, counted exactly) lies in the body.
    assert inside.tolist() == [True, False, False]


def test_pooling_joins_held_values_and_merges_sketches() -> None:
    a, b = np.arange(5.0), np.arange(5.0, 8.0)
    joined = pooled(a, b)
    assert joined.values is not None
    np.testing.assert_array_equal(joined.values, np.arange(8.0))
    merged = pooled(sketch_losses(a, k=3), b)
    assert merged.values is None  # a sketch
    assert merged.n == 8
    np.testing.assert_array_equal(merged.lowest(3), [0.0, 1.0, 2.0])


def test_conversions_keep_samples_and_check_arrays() -> None:
    held = LossValues(np.arange(4.0))
    assert as_sample(held) is held
    assert as_losses(held, "train") is held
    sketch = sketch_losses(np.arange(4.0), k=2)
    assert as_sample(sketch) is sketch
    plan = SummaryPlan.for_rows(4, 4, seed=0)[0]
    summary = summarise_losses(np.arange(4.0), plan)
    assert as_losses(summary, "train") is summary
    with pytest.raises(InvalidInputError, match="train must be finite"):
        as_losses([1.0, float("nan")], "train")


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), decimals=st.integers(0, 2))
def test_the_empirical_estimate_is_the_supremum_over_every_loss(seed: int, decimals: int) -> None:
    """Held losses are estimated from their distinct values' counts: exactly the supremum
    over every observed loss."""
    rng = np.random.default_rng(seed)
    train = np.round(rng.normal(-0.5, 1.0, 300), decimals)
    population = np.round(rng.normal(0.0, 1.0, 250), decimals)
    found = epsilon_star(train, population, delta=1e-3, method="empirical")
    expected = empirical_supremum(train, population, 1e-3)
    assert found.epsilon == expected.epsilon
    assert found.attained_by == expected.term_name
    assert found.threshold == expected.threshold or np.isnan(expected.threshold)


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.integers(-3, 3).map(float) | st.floats(-2, 2), min_size=1, max_size=60),
    trim=st.floats(0.0, 0.5),
)
def test_sorted_body_keeps_the_last_level_of_each_distinct_value(
    values: list[float], trim: float
) -> None:
    x = np.sort(np.array(values))
    k = min(int(trim * x.size), x.size // 2)
    levels = np.linspace(k / x.size, 1.0 - k / x.size, x.size - 2 * k)
    body = x[k : x.size - k]
    # independently: np.unique on the reversed body finds each value's last position
    expected_knots, first_reversed = np.unique(body[::-1], return_index=True)
    knots, kept = sorted_body(x, k)
    assert np.array_equal(knots, expected_knots)
    assert np.array_equal(kept, levels[::-1][first_reversed])


@settings(max_examples=100, deadline=None)
@given(values=losses)
def test_atoms_are_numpy_unique_with_counts(values: list[float]) -> None:
    distinct, counts = LossValues(np.array(values)).atoms
    expected, expected_counts = np.unique(np.array(values), return_counts=True)
    assert np.array_equal(distinct, expected)
    assert np.array_equal(counts, expected_counts)
    assert counts.dtype == np.int64
