"""The blind baseline's records kept while streaming: a bottom-k sample that is the same
rows of the file whatever the batches, every subset equally likely."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from scipy.stats import chisquare

from epsstar.audit.data.records import LABEL
from epsstar.audit.engines.record_sample import RecordSample, joined_sample, sampled_records
from epsstar.audit.model.features import Features
from epsstar.exceptions import InvalidInputError


def _offer(sample: RecordSample, rows: int, batch: int) -> None:
    values = np.arange(rows, dtype=np.float64)
    for start in range(0, rows, batch):
        chunk = values[start : start + batch]
        tensor = np.stack([chunk, -chunk], axis=1)
        sample.add(Features(("x", "t"), (chunk, tensor)), chunk.astype(int) % 3)


def test_the_kept_rows_are_those_rows_of_the_file_in_order() -> None:
    sample = RecordSample(40, (0, 1))
    _offer(sample, 1000, 64)
    frame = sample.frame()
    assert sample.rows == 1000
    assert len(frame) == 40
    np.testing.assert_array_equal(frame["x"].to_numpy(), sample.numbers)
    np.testing.assert_array_equal(frame["t[1]"].to_numpy(), -sample.numbers)
    np.testing.assert_array_equal(frame[LABEL].to_numpy(), sample.numbers % 3)
    assert np.all(np.diff(sample.numbers) > 0)


def test_the_batches_do_not_change_the_sample() -> None:
    one, other = RecordSample(25, 7), RecordSample(25, 7)
    _offer(one, 500, 500)
    _offer(other, 500, 33)
    # The keys are drawn in file order from one generator, so the batches cannot matter.
    np.testing.assert_array_equal(one.numbers, other.numbers)


def test_a_small_table_is_kept_whole() -> None:
    sample = RecordSample(100, 0)
    _offer(sample, 30, 8)
    np.testing.assert_array_equal(sample.numbers, np.arange(30))


def test_every_row_is_equally_likely_to_be_kept() -> None:
    """3,000 samples of 2 rows out of 10: each row kept 600 times in expectation; the
    chi-square test (p > 0.001) protects against a bias towards early or late rows."""
    counts: Counter[int] = Counter()
    for seed in range(3000):
        sample = RecordSample(2, seed)
        _offer(sample, 10, 3)
        counts.update(sample.numbers.tolist())
    assert chisquare([counts[i] for i in range(10)]).pvalue > 1e-3


def test_records_of_both_sides() -> None:
    train, population = RecordSample(10, 0), RecordSample(10, 1)
    _offer(train, 50, 16)
    _offer(population, 8, 16)
    records = sampled_records(train, population)
    assert (records.n_train, records.n_population) == (50, 8)
    assert len(records.train) == 10
    assert len(records.population) == 8
    assert records.subsampled


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="Found 0"):
        RecordSample(0, 0)


def _partitioned(
    limit: int, seed: tuple[int, ...], sizes: list[int], *, known: bool
) -> RecordSample:
    """The samples of consecutive partitions of ``sum(sizes)`` rows, joined: each partition
    keyed past the rows before it (``known``) or from a stream of its own."""
    parts, first = [], 0
    for index, size in enumerate(sizes):
        part = (
            RecordSample(limit, seed, skip=first)
            if known
            else RecordSample(limit, (*seed, 1 + index))
        )
        values = np.arange(first, first + size, dtype=np.float64)
        part.add(Features(("x",), (values,)), values.astype(int) % 3)
        parts.append(part)
        first += size
    return joined_sample(parts)


def test_partitions_keyed_past_their_first_row_join_into_the_whole_tables_sample() -> None:
    whole = RecordSample(40, (5, 1))
    _offer(whole, 1000, 64)
    joined = _partitioned(40, (5, 1), [300, 1, 250, 449], known=True)
    assert joined.rows == 1000
    np.testing.assert_array_equal(joined.numbers, whole.numbers)
    np.testing.assert_array_equal(joined.frame()["x"].to_numpy(), whole.numbers)
    np.testing.assert_array_equal(joined.frame()[LABEL].to_numpy(), whole.numbers % 3)


def test_pruned_partitions_join_into_the_same_sample() -> None:
    seed, sizes = (2,), [120, 80, 200]
    parts, first = [], 0
    for size in sizes:
        part = RecordSample(30, seed, skip=first)
        values = np.arange(first, first + size, dtype=np.float64)
        part.add(Features(("x",), (values,)), values.astype(int) % 3)
        parts.append(part)
        first += size
    largest = float(np.sort(np.concatenate([p.keys for p in parts]))[29])
    pruned = [part.pruned(largest) for part in parts]
    assert sum(p.keys.size for p in pruned) == 30
    np.testing.assert_array_equal(joined_sample(pruned).numbers, joined_sample(parts).numbers)


def test_partitions_of_unknown_first_rows_still_sample_every_row_alike() -> None:
    """Partitions keyed from streams of their own give another draw than the single
    process, but still a simple random sample: 3,000 samples of 2 rows out of 10 (in
    partitions of 4, 1 and 5 rows) keep each row 600 times in expectation (chi-square,
    p > 0.001)."""
    counts: Counter[int] = Counter()
    for seed in range(3000):
        counts.update(_partitioned(2, (seed,), [4, 1, 5], known=False).numbers.tolist())
    assert chisquare([counts[i] for i in range(10)]).pvalue > 1e-3
