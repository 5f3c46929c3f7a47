"""A mergeable, bounded summary of a loss sample, and empirical Epsilon* from two of them.

A :class:`LossSketch` of ``n`` losses holds their ``k`` smallest and ``k`` largest values
exactly and a histogram of all of them on a fixed grid: edges ``x_j = sinh(u_j)`` with
``u_j`` evenly spaced on ``[-U, U]`` (``B`` bins; about ``2U/B`` relative width away from
zero, absolute width ``2U/B`` near it), right-closed bins ``(x_{j-1}, x_j]`` and one open
bin at each end. Its size, ``B + 2`` counts and ``2k`` values, does not grow with ``n``;
sketches of disjoint partitions merge exactly (counts add, the extremes of the union are
among the parts' extremes), so partitions can be summarised where they are read.

The count ``#{l ≤ τ}`` is exact at every grid edge (a cumulative count), below the
``k``-th smallest value and from the ``k``-th largest value on. :func:`sketch_supremum`
evaluates eq. 7 (``epsilon-star-negoescu-2024.md``, as :mod:`epsstar.statistics.empirical`
does) at every threshold where the counts of both samples are exact. Each such pair of
rates is one that the empirical estimator also evaluates (that of the largest observed
loss ≤ τ), so the result is never above the empirical Epsilon* of the full samples; it
can miss only thresholds inside one bin of the body, where each rate moves by at most that
bin's count over ``n``. In the tails, where Epsilon* at a small δ is decided, every
threshold is exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import FloatArray, check_positive_int
from epsstar.statistics.empirical import supremum_from_counts
from epsstar.statistics.ratio_terms import RateWindow, Supremum

__all__ = ["LossSketch", "merge_sketches", "sketch_losses", "sketch_supremum"]

#: Default bins of the grid and its half-width on the asinh scale (edges to ±sinh(16) ≈ 4.4e6).
BINS = 1 << 17
HALF_WIDTH = 16.0


def _edges(bins: int, half_width: float) -> FloatArray:
    return np.sinh(np.linspace(-half_width, half_width, bins + 1))


@dataclass(frozen=True, slots=True)
class LossSketch:
    """``n`` losses as their ``k`` smallest (``low``) and largest (``high``) values, sorted,
    and their ``counts`` on the grid of ``bins`` bins of half-width ``half_width``."""

    n: int
    k: int
    low: FloatArray = field(repr=False)
    high: FloatArray = field(repr=False)
    counts: NDArray[np.int64] = field(repr=False)
    bins: int = BINS
    half_width: float = HALF_WIDTH

    @property
    def complete(self) -> bool:
        """Whether ``low`` holds every value (``n ≤ k``)."""
        return self.n <= self.k

    @property
    def nbytes(self) -> int:
        return int(self.low.nbytes + self.high.nbytes + self.counts.nbytes)

    def count_below(self, thresholds: FloatArray) -> tuple[FloatArray, NDArray[np.bool_]]:
        """``#{l ≤ τ}`` at each threshold, and whether that count is exact."""
        taus = np.asarray(thresholds, dtype=np.float64)
        if self.complete:
            exact_count = np.searchsorted(self.low, taus, side="right").astype(np.float64)
            return exact_count, np.ones(taus.shape, dtype=bool)
        edges = _edges(self.bins, self.half_width)
        cumulative = np.cumsum(self.counts)
        counts = np.full(taus.shape, np.nan)
        exact = np.zeros(taus.shape, dtype=bool)
        position = np.searchsorted(edges, taus)
        on_edge = (position <= self.bins) & (edges[np.minimum(position, self.bins)] == taus)
        counts[on_edge] = cumulative[position[on_edge]]
        exact |= on_edge
        in_high = taus >= self.high[0]
        above = self.high.size - np.searchsorted(self.high, taus[in_high], side="right")
        counts[in_high] = self.n - above
        exact |= in_high
        in_low = taus < self.low[-1]
        counts[in_low] = np.searchsorted(self.low, taus[in_low], side="right")
        exact |= in_low
        return counts, exact


def sketch_losses(
    losses: FloatArray, k: int = 10_000, *, bins: int = BINS, half_width: float = HALF_WIDTH
) -> LossSketch:
    """The sketch of a finite 1-D loss sample (at least one loss)."""
    k = check_positive_int("k", k)
    values = np.asarray(losses, dtype=np.float64).reshape(-1)
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise InvalidInputError(f"losses must be finite and non-empty. Found {values.size} values.")
    if values.size <= k:
        low = high = np.sort(values)
    else:
        low = np.sort(np.partition(values, k - 1)[:k])
        high = np.sort(np.partition(values, values.size - k)[values.size - k :])
    index = np.searchsorted(_edges(bins, half_width), values)
    counts = np.bincount(index, minlength=bins + 2).astype(np.int64)
    return LossSketch(int(values.size), k, low, high, counts, bins, half_width)


def merge_sketches(sketches: Sequence[LossSketch]) -> LossSketch:
    """The sketch of the union of the samples (same ``k`` and grid)."""
    first = sketches[0]
    for other in sketches[1:]:
        if (other.k, other.bins, other.half_width) != (first.k, first.bins, first.half_width):
            raise InvalidInputError(
                f"sketches must share k and the grid to merge. Found "
                f"{(other.k, other.bins, other.half_width)} and "
                f"{(first.k, first.bins, first.half_width)}."
            )
    n = sum(s.n for s in sketches)
    k = first.k
    low = np.sort(np.concatenate([s.low for s in sketches]))[:k]
    high = np.sort(np.concatenate([s.high for s in sketches]))[-k:]
    counts = np.sum([s.counts for s in sketches], axis=0).astype(np.int64)
    return LossSketch(n, k, low, high, counts, first.bins, first.half_width)


def sketch_supremum(
    train: LossSketch, population: LossSketch, delta: float, window: RateWindow | None = None
) -> Supremum:
    """Empirical Epsilon* (eq. 7, rates in ``window``, default ``(δ, 1-δ)``) at every
    threshold where both sketches give exact counts (see the module's description)."""
    candidates = [train.low, train.high, population.low, population.high]
    if not (train.complete and population.complete):
        candidates.append(_edges(train.bins, train.half_width))
    thresholds = np.unique(np.concatenate(candidates))
    pop_below, pop_exact = population.count_below(thresholds)
    train_below, train_exact = train.count_below(thresholds)
    keep = pop_exact & train_exact
    thresholds, pop_below, train_below = thresholds[keep], pop_below[keep], train_below[keep]
    return supremum_from_counts(
        thresholds,
        pop_below,
        train_below,
        n_train=train.n,
        n_population=population.n,
        delta=delta,
        window=window,
    )
