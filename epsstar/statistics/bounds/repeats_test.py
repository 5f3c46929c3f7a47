"""The premise's test of exact repeats: do the two tables repeat their own rows equally often?

A population that was de-duplicated (or a training file that holds duplicates the
population does not) differs from the training table in one number, the share of rows that
repeat a row of their own side. A classifier of the records sees it only weakly (a
training row is recognised only when its twin fell in the other fold: docs/premise.md);
this test reads it directly.

Statistic: ``T = r_t / n_t - r_p / n_p``, where ``r`` is a side's rows less its distinct
rows (its repeats) and ``n`` its rows; two-sided (``|T|``). Null: the premise, under which
the ``n_t + n_p`` rows are exchangeable between the sides (two i.i.d. samples of one law, or
a random split of one file), so every assignment of the pooled rows to sides with the
observed sizes is equally likely, whatever the law's own duplicates (a table of few
categorical columns repeats many rows on both sides, and the test keeps its level). The
p-value is the Monte Carlo permutation p-value ``(1 + #{|T*| >= |T|}) / (1 + B)`` over
``B`` seeded reassignments, exact at any size because it counts the observed assignment
among them (Phipson & Smyth 2010).

Why by hand rather than :func:`scipy.stats.permutation_test`: only the rows that have a twin
somewhere in the pool can change ``T``; scipy permutes every row (``B`` sorts of ``n_t +
n_p`` rows per test), while here only each group's count of training rows is drawn, from
its law under a random reassignment (multivariate hypergeometric, numpy's
``Generator.multivariate_hypergeometric``), ``O(B G)`` for ``G`` groups of repeated rows,
and nothing when no row repeats, the case of most tables of continuous features.
"""

from __future__ import annotations

from typing import Final

import numpy as np
from numpy.typing import NDArray

__all__ = ["REPEAT_RESAMPLES", "repeat_groups", "repeats_p_value"]

#: Reassignments of the permutation test: its smallest p-value, 1 / 2,000, is 25 times
#: below the level 0.05 / 4.
REPEAT_RESAMPLES: Final = 1_999
#: Reassignments drawn at once, times the rows with a twin (bounds the memory: 8 MB).
_CHUNK_CELLS: Final = 1_000_000


def repeat_groups(rows: NDArray[np.floating]) -> NDArray[np.int64]:
    """An id per row of a 2-D array, ``0 .. G-1``, equal for rows equal in every column
    (NaN equal to NaN, ``-0.0`` to ``0.0``) and different otherwise.

    Rows are first hashed, ``h = sum_k b_k m_k`` modulo 2**64 over their values' bit
    patterns ``b_k`` with fixed random odd multipliers ``m_k`` (a few vectorised passes);
    only the rows whose hash is shared are then compared value by value, so the ids are
    exact while sorting whole rows (what ``np.unique(axis=0)`` does, seconds on a table of
    600 columns) is paid only for rows that repeat or collide.
    """
    values = _canonical(rows)
    if values.shape[1] == 0:
        return np.zeros(len(values), np.int64)
    hashed = _row_hashes(values)
    _, ids, counts = np.unique(hashed, return_inverse=True, return_counts=True)
    ids = ids.astype(np.int64).ravel()
    shared = counts[ids] >= 2
    if shared.any():
        twins = np.ascontiguousarray(values[shared])
        raw = twins.view(np.dtype((np.void, twins.dtype.itemsize * twins.shape[1]))).ravel()
        _, exact = np.unique(raw, return_inverse=True)
        ids[shared] = len(counts) + exact.ravel()
        _, ids = np.unique(ids, return_inverse=True)  # 0 .. G-1 again
    return ids.astype(np.int64).ravel()


def _canonical(rows: NDArray[np.floating]) -> NDArray[np.floating]:
    """``rows`` as a C-ordered 2-D float array (float32 kept, else float64) with one bit
    pattern per value: ``-0.0`` as ``0.0``, every NaN as one NaN."""
    array = np.asarray(rows)
    dtype: type[np.floating] = np.float32 if array.dtype == np.float32 else np.float64
    values: NDArray[np.floating] = np.array(array, dtype=dtype, order="C")
    values = values.reshape(len(array), -1)
    values += 0.0  # -0.0 becomes 0.0 (a copy was made above: the caller's rows stay as they are)
    values[np.isnan(values)] = np.nan
    return values


#: Fixed odd 64-bit multipliers of the row hash, one per column (cycled past 4096).
_MULTIPLIERS: Final = np.random.default_rng(0x5EED).integers(
    0, np.iinfo(np.uint64).max, size=4096, dtype=np.uint64, endpoint=True
) | np.uint64(1)
#: Values hashed at once (bounds the temporary to 32 MB).
_HASH_CELLS: Final = 4_000_000


def _row_hashes(values: NDArray[np.floating]) -> NDArray[np.uint64]:
    """``sum_k b_k m_k mod 2**64`` per row, ``b_k`` the bit pattern of the row's k-th value."""
    bits = values.view(np.uint32 if values.dtype == np.float32 else np.uint64)
    multipliers = np.resize(_MULTIPLIERS, bits.shape[1])
    hashed = np.empty(len(bits), np.uint64)
    step = max(1, _HASH_CELLS // bits.shape[1])
    for start in range(0, len(bits), step):
        block = bits[start : start + step].astype(np.uint64)
        block *= multipliers  # wraps modulo 2**64
        hashed[start : start + step] = block.sum(axis=1, dtype=np.uint64)
    return hashed


def _repeats(train_count: NDArray[np.int64], total: NDArray[np.int64]) -> NDArray[np.int64]:
    """Repeats of the training side less those of the population, ``r_t`` and ``r_p``
    stacked on the last axis, from each group's training rows (``... x G``) and size."""
    train_repeats = np.maximum(train_count - 1, 0).sum(axis=-1)
    other_repeats = np.maximum(total - train_count - 1, 0).sum(axis=-1)
    return np.stack([train_repeats, other_repeats], axis=-1)


def repeats_p_value(
    train: NDArray[np.int64],
    population: NDArray[np.int64],
    *,
    seed: int,
    resamples: int = REPEAT_RESAMPLES,
) -> float:
    """Two-sided permutation p-value that both sides repeat their rows at one rate, from
    each row's group id (:func:`repeat_groups` over both sides at once); see the module
    docstring. 1 when no row has a twin."""
    n_t, n_p = len(train), len(population)
    pooled = np.concatenate([np.asarray(train), np.asarray(population)])
    _, group, size = np.unique(pooled, return_inverse=True, return_counts=True)
    twinned = size[group] >= 2
    if not twinned.any() or n_t == 0 or n_p == 0:
        return 1.0
    # The K rows with a twin, their groups renumbered 0..G-1.
    _, twin_group = np.unique(group[twinned], return_inverse=True)
    twin_group = twin_group.ravel()
    k, g = twin_group.size, int(twin_group.max()) + 1
    total = np.bincount(twin_group, minlength=g)
    is_train = (np.arange(n_t + n_p) < n_t)[twinned]

    def statistic(counts: NDArray[np.int64]) -> NDArray[np.int64]:
        # r_t / n_t - r_p / n_p, times n_t n_p: integers, so ties compare exactly.
        r = _repeats(counts, total)
        gap: NDArray[np.int64] = np.abs(r[..., 0] * n_p - r[..., 1] * n_t)
        return gap

    observed = statistic(np.bincount(twin_group, is_train, minlength=g).astype(np.int64))
    # Under the null the training side is n_t rows drawn without replacement from the pool:
    # its count in each group (and among the rows without a twin, the last colour) is
    # multivariate hypergeometric.
    colours = np.append(total, n_t + n_p - k)
    rng = np.random.default_rng([seed, 0xD0B])
    at_least = 0
    chunk = max(1, _CHUNK_CELLS // (g + 1))
    for start in range(0, resamples, chunk):
        b = min(chunk, resamples - start)
        drawn = rng.multivariate_hypergeometric(colours, n_t, size=b, method="marginals")
        at_least += int((statistic(drawn[:, :g].astype(np.int64)) >= observed).sum())
    return (1 + at_least) / (1 + resamples)
