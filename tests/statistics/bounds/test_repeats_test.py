"""The premise's test of exact repeats: its p-value against scipy's exact permutation test,
its level on tables with many natural repeats, its power against a de-duplicated side, and
the ids of equal rows."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.typing import NDArray
from scipy.stats import binomtest, permutation_test

from epsstar.statistics.bounds.repeats_test import repeat_groups, repeats_p_value


def _repeat_gap(x: NDArray[np.int64], y: NDArray[np.int64], axis: int = -1) -> NDArray[np.float64]:
    """|r_x / n_x - r_y / n_y|, a side's repeats being its rows less its distinct rows,
    counted by sorting (not as the project counts them), vectorised for scipy."""

    def repeats(side: NDArray[np.int64]) -> NDArray[np.int64]:
        ordered = np.sort(np.moveaxis(side, axis, -1), axis=-1)
        return (np.diff(ordered, axis=-1) == 0).sum(axis=-1)

    return np.abs(repeats(x) / x.shape[axis] - repeats(y) / y.shape[axis])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_p_value_is_scipys_exact_permutation_p_value(seed: int) -> None:
    """Nine and seven rows from four values: scipy enumerates all 11,440 assignments; the
    project's Monte Carlo p-value over 40,000 draws is within 4 standard errors of it (the
    tolerance protects against Monte Carlo noise only)."""
    rng = np.random.default_rng(seed)
    train, population = rng.integers(0, 4, 9), rng.integers(0, 6, 7)
    exact = permutation_test(
        (train, population),
        _repeat_gap,
        permutation_type="independent",
        alternative="greater",
        n_resamples=np.inf,
        vectorized=True,
    ).pvalue
    ours = repeats_p_value(train, population, seed=seed, resamples=40_000)
    assert ours == pytest.approx(exact, abs=4 * np.sqrt(exact * (1 - exact) / 40_000) + 1e-4)


def test_the_level_holds_on_tables_with_many_natural_repeats() -> None:
    """600 pairs of random splits of rows of six skewed four-valued columns (about a quarter
    of 300 rows repeat one): flagged at 0.05 no more often than chance allows (one-sided
    binomial test at 0.001 against a false-alarm rate above 0.05)."""
    rng = np.random.default_rng(11)
    flags = 0
    for trial in range(600):
        rows = rng.choice(4, size=(600, 6), p=[0.55, 0.25, 0.12, 0.08])
        ids = repeat_groups(rows.astype(float))
        flags += repeats_p_value(ids[:300], ids[300:], seed=trial, resamples=199) <= 0.05
    assert binomtest(flags, 600, 0.05, alternative="greater").pvalue > 1e-3


def test_a_de_duplicated_side_is_flagged() -> None:
    rng = np.random.default_rng(4)
    pool = rng.choice(4, size=(2000, 6), p=[0.55, 0.25, 0.12, 0.08]).astype(float)
    ids = repeat_groups(pool)
    distinct = np.unique(ids[1000:])
    # About 27 % of 1,000 such rows repeat one; the population keeps one of each.
    assert repeats_p_value(ids[:1000], distinct[: len(distinct) // 2], seed=0) < 0.05 / 4
    assert repeats_p_value(ids[:1000], ids[1000:], seed=0) > 0.05 / 4


def test_rows_without_twins_give_one() -> None:
    assert repeats_p_value(np.arange(5), np.arange(5, 12), seed=0) == 1.0
    assert repeats_p_value(np.arange(5), np.array([], np.int64), seed=0) == 1.0


def test_equal_rows_share_an_id() -> None:
    rows = np.array([[np.nan, -0.0], [np.nan, 0.0], [1.0, 2.0], [1.0, 2.0 + 1e-9]])
    ids = repeat_groups(rows)
    assert ids[0] == ids[1]
    assert len(set(ids.tolist())) == 3


def _partition(ids: NDArray[np.int64]) -> set[frozenset[int]]:
    groups: dict[int, set[int]] = {}
    for row, group in enumerate(ids.tolist()):
        groups.setdefault(group, set()).add(row)
    return {frozenset(rows) for rows in groups.values()}


def _sorted_partition(rows: NDArray[np.floating]) -> set[frozenset[int]]:
    """The groups of equal rows found by sorting whole rows with ``np.unique(axis=0)`` (not
    as the project finds them), after making -0.0 equal to 0.0 and every NaN one value
    (9.0, which the rows never hold)."""
    canonical = np.where(np.isnan(rows), 9.0, rows + 0.0)  # 9.0 is not among the values
    _, ids = np.unique(canonical, axis=0, return_inverse=True)
    return _partition(ids.ravel())


@settings(max_examples=60, deadline=None)
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(1, 40), st.integers(1, 5)),
        elements=st.sampled_from([0.0, -0.0, 1.0, 2.5, np.nan, 1e-300]),
    ),
    st.sampled_from([np.float32, np.float64]),
)
def test_the_groups_are_the_rows_equal_in_every_column(
    rows: NDArray[np.float64], dtype: type[np.floating]
) -> None:
    ids = repeat_groups(rows.astype(dtype))
    assert _partition(ids) == _sorted_partition(rows.astype(dtype).astype(np.float64))
    assert sorted(set(ids.tolist())) == list(range(int(ids.max()) + 1))


def test_rows_whose_hashes_collide_keep_their_own_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every hash made equal: the ids come from comparing the values alone."""
    import epsstar.statistics.bounds.repeats_test as module

    monkeypatch.setattr(module, "_row_hashes", lambda values: np.zeros(len(values), np.uint64))
    rows = np.array([[1.0, 2.0], [1.0, 2.0], [2.0, 1.0], [3.0, 0.0]])
    assert _partition(module.repeat_groups(rows)) == {
        frozenset({0, 1}),
        frozenset({2}),
        frozenset({3}),
    }
