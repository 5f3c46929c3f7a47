"""The premise's test of exact repeats: its p-value against scipy's exact permutation test,
its level on tables with many natural repeats, its power against a de-duplicated side, and
the ids of equal rows."""

from __future__ import annotations

import numpy as np
import pytest
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
