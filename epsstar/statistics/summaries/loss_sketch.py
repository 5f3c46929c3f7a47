"""A mergeable, bounded summary of a loss sample, and the thresholds where two of them count
exactly.

A :class:`LossSketch` of ``n`` losses holds their ``k`` smallest and ``k`` largest values
exactly and a histogram of all of them on a fixed grid: edges ``x_j = s·sinh(u_j)`` with
``u_j`` evenly spaced on ``[-U, U]`` (``B`` bins; about ``2U/B`` relative width for
``|x| ≫ s``, absolute width ``2Us/B`` near zero, so that losses near 0, such as the
cross-entropy of confident predictions, are resolved too), right-closed bins
``(x_{j-1}, x_j]`` and one open bin at each end. Its size, ``B + 2`` counts and ``2k``
values, does not grow with ``n``; sketches of disjoint partitions merge exactly (counts
add, the extremes of the union are among the parts' extremes), so partitions can be
summarised where they are read.

The count ``#{l ≤ τ}`` is exact at every grid edge (a cumulative count), below the
``k``-th smallest value and from the ``k``-th largest value on: :func:`exact_counts` gives
every threshold where the counts of both samples are exact, the thresholds at which the
empirical estimator evaluates eq. 7 on sketches
(:func:`epsstar.statistics.estimators.empirical.sketch_supremum`).

A sketch is a :class:`~epsstar.statistics.summaries.protocols.Sample`, as are losses held
in memory (:class:`~epsstar.statistics.summaries.loss_values.LossValues`);
:func:`pooled`, :func:`pooled_parts` and :func:`exact_counts` read two samples of either
kind together.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import FloatArray, check_positive_int
from epsstar.statistics.summaries.loss_values import LossValues, empirical_counts, sorted_body
from epsstar.statistics.summaries.protocols import Sample

__all__ = [
    "LossSketch",
    "Sample",
    "SampleLike",
    "as_sample",
    "exact_counts",
    "grid_edges",
    "merge_sketches",
    "pooled",
    "pooled_parts",
    "size_of",
    "sketch_auc",
    "sketch_losses",
]

#: Default bins of the grid, its half-width on the asinh scale and its scale: edges up to
#: ±1e-9·sinh(37) ≈ ±5.9e6, relative width 2.8e-4 above 1e-9 in magnitude.
BINS = 1 << 18
HALF_WIDTH = 37.0
SCALE = 1e-9


@functools.lru_cache(maxsize=4)
def grid_edges(bins: int = BINS, half_width: float = HALF_WIDTH) -> FloatArray:
    """The ``bins + 1`` edges of the grid (read-only)."""
    edges = SCALE * np.sinh(np.linspace(-half_width, half_width, bins + 1))
    edges.flags.writeable = False
    return edges


def _edges(bins: int, half_width: float) -> FloatArray:
    return grid_edges(bins, half_width)


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

    @property
    def values(self) -> None:
        """A sketch does not hold every value as an array (:class:`~.protocols.Sample`)."""
        return None

    def sketch_of(self, values: FloatArray) -> LossSketch:
        """The sketch of ``values`` on this grid, with this ``k``."""
        return sketch_losses(
            np.asarray(values, dtype=np.float64), self.k, bins=self.bins, half_width=self.half_width
        )

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

    def countable(self, thresholds: FloatArray) -> NDArray[np.bool_]:
        """Whether each threshold lies well inside the kept tails (exact, at most half the
        ``k`` kept values beyond it), so that another sketch of as many values, drawn alike,
        counts exactly there too; every threshold when the sketch holds every value."""
        if self.complete:
            return np.ones(np.shape(thresholds), dtype=bool)
        counts, exact = self.count_below(thresholds)
        margin = self.k / 2
        return np.asarray(exact & ((counts <= margin) | (counts >= self.n - margin)))

    @property
    def extremes_kept(self) -> int:
        """The values per tail it keeps: ``k``, or ``n`` when it holds every value."""
        return min(self.low.size, self.n)

    def lowest(self, m: int) -> FloatArray:
        """The ``m`` smallest values, sorted (``m`` at most ``k``, or ``n`` when complete)."""
        self._check_kept(m)
        return self.low[:m]

    def highest(self, m: int) -> FloatArray:
        """The ``m`` largest values, sorted."""
        self._check_kept(m)
        return self.high[self.high.size - m :]

    def _check_kept(self, m: int) -> None:
        if not 0 <= m <= self.extremes_kept:
            raise InvalidInputError(
                f"a sketch keeps its {self.low.size} most extreme values per tail. Found a "
                f"request for {m}."
            )

    def floor_edges(self, thresholds: FloatArray) -> FloatArray:
        """The largest grid edge at or below each threshold (the smallest edge below the grid)."""
        edges = _edges(self.bins, self.half_width)
        index = np.searchsorted(edges, np.asarray(thresholds, dtype=np.float64), side="right")
        return np.asarray(edges[np.maximum(index - 1, 0)], dtype=np.float64)

    def quantiles(self, levels: FloatArray) -> FloatArray:
        """The ``inverted_cdf`` quantile at each level where the sketch holds it (the
        ``ceil(q·n)``-th smallest value, in a tail), else the grid edge just below it."""
        q = np.asarray(levels, dtype=np.float64)
        rank = np.clip(np.ceil(q * self.n - 1e-9 * q * self.n).astype(np.int64), 1, self.n)
        if self.complete:
            return np.asarray(self.low[rank - 1], dtype=np.float64)
        edges = _edges(self.bins, self.half_width)
        cumulative = np.cumsum(self.counts)
        # bin j of the counts holds (edge[j-1], edge[j]]; the rank-th value lies in bin j.
        bins = np.searchsorted(cumulative, rank, side="left")
        found = edges[np.clip(bins - 1, 0, self.bins)]
        kept = self.low.size
        in_low, in_high = rank <= kept, rank > self.n - kept
        found = np.where(in_low, self.low[np.minimum(rank, kept) - 1], found)
        high_index = np.clip(rank - (self.n - kept) - 1, 0, kept - 1)
        return np.asarray(np.where(in_high, self.high[high_index], found), dtype=np.float64)

    def body(self, k: int) -> tuple[FloatArray, FloatArray]:
        """Knots and levels of the interpolated empirical CDF between the ``k+1``-th smallest
        and the ``k+1``-th largest value (as :mod:`epsstar.statistics.fitting.tails` builds
        it from a sorted sample): every value the sketch holds there and the grid edges
        between its two tails, each at the level of the last value at or below it. Exact
        at every knot; between two edges the line replaces the values of one bin. A sketch
        that holds every value gives the exact body (:func:`~.loss_values.sorted_body`)."""
        if self.complete:
            return sorted_body(self.low, k)
        n = self.n
        u_low, u_high = float(self.lowest(k + 1)[-1]), float(self.highest(k + 1)[0])
        edges = _edges(self.bins, self.half_width)
        low_end, high_start = float(self.low[-1]), float(self.high[0])
        inside = edges[(edges > low_end) & (edges < high_start)]
        held = np.concatenate([self.low[self.low >= u_low], self.high[self.high <= u_high]])
        knots = np.unique(np.concatenate([held[(held >= u_low) & (held <= u_high)], inside]))
        counts, exact = self.count_below(knots)
        # Values tied with the lower tail's last kept value are counted from the grid.
        tied = ~exact
        counts[tied] = np.searchsorted(self.low, knots[tied], side="right")
        last = np.clip(counts - 1, k, n - k - 1)
        levels = k / n + (last - k) * ((1.0 - 2.0 * k / n) / (n - 2 * k - 1))
        return knots, np.asarray(levels, dtype=np.float64)


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


#: A sample as functions take it: an array of losses or a :class:`~.protocols.Sample`
#: (:class:`~.loss_values.LossValues` or :class:`LossSketch`).
SampleLike: TypeAlias = ArrayLike | Sample


def as_sample(values: SampleLike) -> Sample:
    """``values`` as a :class:`~.protocols.Sample`: a sample as it is, anything else as an
    array of losses, :class:`~.loss_values.LossValues` (1-D float64)."""
    if isinstance(values, LossValues | LossSketch):
        return values
    return LossValues(np.asarray(values, dtype=np.float64))


def size_of(values: object) -> int:
    """How many losses ``values`` stands for: a sample's or summary's ``n``, an array's size."""
    n = getattr(values, "n", None)
    return n if isinstance(n, int) else int(np.asarray(values).size)


def pooled(first: SampleLike, second: SampleLike) -> Sample:
    """Both samples as one: the values joined when both are held, else the sketches merged
    (held values are sketched on the sketch's grid with its ``k``)."""
    a, b = as_sample(first), as_sample(second)
    if a.values is not None and b.values is not None:
        return LossValues(np.concatenate([a.values, b.values]))
    return merge_sketches(list(pooled_parts(a, b)))


def pooled_parts(first: SampleLike, second: SampleLike) -> tuple[LossSketch, LossSketch]:
    """Both samples as sketches on one grid (at least one of them is a sketch)."""
    a, b = as_sample(first), as_sample(second)
    sketches = [sample for sample in (a, b) if isinstance(sample, LossSketch)]
    if not sketches:
        raise InvalidInputError("pooled_parts needs a sketch among its samples. Found two arrays.")
    like = sketches[0]

    def on_grid(sample: Sample) -> LossSketch:
        """A sketch as it is; every loss held, sketched on ``like``'s grid with its ``k``."""
        if isinstance(sample, LossSketch):
            return sample
        assert sample.values is not None  # a sample that is no sketch holds every loss
        return like.sketch_of(sample.values)

    return on_grid(a), on_grid(b)


def exact_counts(
    train: SampleLike, population: SampleLike
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Every threshold where both samples count exactly, with ``#{population ≤ τ}`` and
    ``#{train ≤ τ}``: every distinct loss when both hold every value
    (:func:`~epsstar.statistics.summaries.loss_values.empirical_counts`), else each value their
    sketches hold and, unless both are complete, each grid edge (held values are sketched on
    the sketch's grid, :func:`pooled_parts`)."""
    a, b = as_sample(train), as_sample(population)
    if a.values is not None and b.values is not None:
        return empirical_counts(a.values, b.values)
    members, others = pooled_parts(a, b)
    candidates = [members.low, members.high, others.low, others.high]
    if not (members.complete and others.complete):
        candidates.append(_edges(members.bins, members.half_width))
    thresholds = np.unique(np.concatenate(candidates))
    pop_below, pop_exact = others.count_below(thresholds)
    train_below, train_exact = members.count_below(thresholds)
    keep = pop_exact & train_exact
    return thresholds[keep], pop_below[keep], train_below[keep]


def sketch_auc(members: LossSketch, others: LossSketch) -> float:
    """AUC of the loss attack (members called below a threshold), ``P(l_m < l_o) + ½ P(=)``
    over pairs, from the two histograms: pairs within one bin count ½, so the error is at
    most half the share of pairs that fall in a common bin."""
    below = np.concatenate([[0], np.cumsum(members.counts)[:-1]]).astype(np.float64)
    twice = float(np.sum(others.counts * (2.0 * below + members.counts)))
    return twice / (2.0 * members.n * others.n)
