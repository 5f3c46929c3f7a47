"""The arithmetic of the extraction test (:mod:`epsstar.statistics.attacks.extraction`)
against references: Levenshtein's recursion, the (n, p) rule in closed form, the
Clopper–Pearson interval from the beta quantiles."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.attacks.extraction import (
    ExtractionRate,
    discoverable,
    edit_distance,
    extraction_log_probability,
    normalised_edit_distances,
    rate,
)


def _reference_distance(a: list[int], b: list[int]) -> int:
    """Levenshtein's recursion, cell by cell."""
    table = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i, j in itertools.product(range(1, len(a) + 1), range(1, len(b) + 1)):
        table[i][j] = min(
            table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + (a[i - 1] != b[j - 1])
        )
    return table[-1][-1]


def test_the_edit_distance_is_levenshtein_s() -> None:
    rng = np.random.default_rng(0)
    pairs = [([], []), ([], [1, 2]), ([3], []), ([1, 2, 3], [1, 2, 3]), ([1, 2, 3], [3, 2, 1])]
    pairs += [
        (rng.integers(0, 4, rng.integers(0, 12)).tolist(), rng.integers(0, 4, 10).tolist())
        for _ in range(200)
    ]
    for a, b in pairs:
        assert edit_distance(a, b) == _reference_distance(a, b), (a, b)


def test_the_n_p_rule_is_one_minus_the_chance_that_every_sample_misses() -> None:
    # p_z = 0.1: 10 samples find the suffix with 1 − 0.9^10 = 0.651, 6 samples with 0.469
    log_p_z = np.array([math.log(0.1), math.log(0.1), -math.inf, math.log(1e-12)])
    assert discoverable(log_p_z, 10, 0.5).tolist() == [True, True, False, False]
    assert discoverable(log_p_z, 6, 0.5).tolist() == [False, False, False, False]
    # tiny p_z exactly: 1 − (1 − 1e−12)^(10^12) = 1 − 1/e
    assert discoverable(np.log([1e-12]), 10**12, 0.632).tolist() == [True]
    assert discoverable(np.log([1e-12]), 10**12, 0.633).tolist() == [False]


def test_distances_are_normalised_by_the_suffix_s_length() -> None:
    suffixes = np.array([[1, 2, 3, 4], [1, 2, 3, 4]])
    continuations = np.array([[1, 2, 3, 4], [1, 9, 3, 9]])
    assert normalised_edit_distances(continuations, suffixes).tolist() == [0.0, 0.5]
    with pytest.raises(InvalidInputError, match="one shape"):
        normalised_edit_distances(continuations[:, :3], suffixes)


def test_log_p_z_sums_the_suffix_s_log_probabilities() -> None:
    found = extraction_log_probability([[math.log(0.5), math.log(0.5)], [0.0, -math.inf]])
    assert found.tolist() == [pytest.approx(math.log(0.25)), -math.inf]


def test_a_rate_s_interval_is_clopper_pearson_s() -> None:
    for count, records in ((0, 10), (3, 10), (10, 10), (45, 103)):
        found = rate(count, records, 0.95)
        lower = stats.beta.ppf(0.025, count, records - count + 1) if count else 0.0
        upper = stats.beta.ppf(0.975, count + 1, records - count) if count < records else 1.0
        assert (found.count, found.records) == (count, records)
        assert found.rate == count / records
        assert found.lower == pytest.approx(lower, abs=1e-12)
        assert found.upper == pytest.approx(upper, abs=1e-12)
    with pytest.raises(InvalidInputError, match="at most records"):
        rate(11, 10, 0.95)


def test_a_measure_s_excess_is_training_minus_population() -> None:
    measured = ExtractionRate.of(
        "greedy exact", (np.array([1, 1, 0, 0], bool), np.array([1, 0, 0, 0, 0], bool)), 0.95
    )
    assert measured.excess == pytest.approx(0.5 - 0.2)
    assert measured.to_dict()["excess"] == pytest.approx(0.3)
