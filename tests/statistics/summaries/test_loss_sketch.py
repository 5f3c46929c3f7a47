"""The mergeable loss sketch and empirical Epsilon* from two sketches."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.estimators.empirical import empirical_supremum, sketch_supremum
from epsstar.statistics.summaries.loss_sketch import merge_sketches, sketch_losses


def _split(values: np.ndarray, cuts: list[int]) -> list[np.ndarray]:
    points = sorted({min(max(c, 1), values.size - 1) for c in cuts if values.size > 1})
    return [part for part in np.split(values, points) if part.size]


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 400),
    k=st.integers(1, 50),
    cuts=st.lists(st.integers(0, 400), max_size=6),
    bins=st.sampled_from([8, 64, 1024]),
)
def test_merged_partition_sketches_are_the_sketch_of_the_whole(
    seed: int, n: int, k: int, cuts: list[int], bins: int
) -> None:
    rng = np.random.default_rng(seed)
    values = np.round(rng.standard_t(3, size=n) * 3, 1)  # ties and heavy tails
    whole = sketch_losses(values, k, bins=bins)
    merged = merge_sketches([sketch_losses(part, k, bins=bins) for part in _split(values, cuts)])
    assert merged.n == whole.n == n
    np.testing.assert_array_equal(merged.low, whole.low)
    np.testing.assert_array_equal(merged.high, whole.high)
    np.testing.assert_array_equal(merged.counts, whole.counts)
    np.testing.assert_array_equal(merged.low, np.sort(values)[:k])
    np.testing.assert_array_equal(merged.high, np.sort(values)[-k:])


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_train=st.integers(5, 300),
    n_pop=st.integers(5, 300),
    shift=st.floats(0, 3),
    k=st.integers(1, 40),
    bins=st.sampled_from([4, 32, 4096]),
)
def test_sketch_epsilon_never_exceeds_the_empirical_and_counts_are_exact(
    seed: int, n_train: int, n_pop: int, shift: float, k: int, bins: int
) -> None:
    rng = np.random.default_rng(seed)
    train = np.round(rng.normal(size=n_train), 2)
    population = np.round(rng.normal(shift, size=n_pop), 2)
    delta = 1e-3
    exact = empirical_supremum(train, population, delta).epsilon
    sketches = sketch_losses(train, k, bins=bins), sketch_losses(population, k, bins=bins)
    found = sketch_supremum(*sketches, delta)
    assert found.epsilon <= exact + 1e-12
    if found.epsilon > 0:  # the rates it reports are the samples' at its threshold
        assert found.fpr == np.mean(population <= found.threshold)
        assert found.fnr == np.mean(train > found.threshold)
    if n_train <= k and n_pop <= k:  # complete sketches: every threshold is exact
        assert found.epsilon == exact


def test_a_fine_grid_agrees_with_the_empirical_estimate_on_a_large_sample() -> None:
    # Independent check: 400,000 + 400,000 continuous losses in 20 partitions each.
    rng = np.random.default_rng(7)
    train = rng.gamma(2.0, 5.0, size=400_000)
    population = rng.gamma(3.0, 5.0, size=400_000)
    delta = 1e-6
    exact = empirical_supremum(train, population, delta).epsilon
    merged = [
        merge_sketches([sketch_losses(part, 1_000) for part in np.array_split(side, 20)])
        for side in (train, population)
    ]
    found = sketch_supremum(merged[0], merged[1], delta).epsilon
    assert 0 <= exact - found <= 1e-3
    assert merged[0].nbytes < 2**21 + 40_000  # bounded: 2^18 counts and 2k values


def test_bad_input_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="finite and non-empty"):
        sketch_losses(np.array([1.0, np.nan]))
    with pytest.raises(InvalidInputError, match="share k and the grid"):
        merge_sketches([sketch_losses(np.ones(3), 2), sketch_losses(np.ones(3), 3)])
