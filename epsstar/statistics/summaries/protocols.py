"""What the estimators read of losses, the same whether every loss is held or summarised.

Two levels (eq. 7 of Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning
Models", needs only counts of losses at or below thresholds, and the tail fits only the extremes
and the body of each CDF):

* :class:`Losses`, one side of an audit (training or population losses): its size, its
  halves for the cross-fitting and for the held-out tests, the whole sample, its distinct
  values with their counts, how often its extreme values repeat, and a sample for figures.
  :class:`~epsstar.statistics.summaries.loss_values.LossValues` holds every loss in
  memory; :class:`~epsstar.statistics.summaries.loss_summary.LossSummary` summarises losses
  too many to hold.
* :class:`Sample`, a set of losses as the counts and the fits read it: counts at or below
  thresholds (and where they are exact), quantiles, the extremes and the interpolated body.
  ``LossValues`` counts exactly everywhere;
  :class:`~epsstar.statistics.summaries.loss_sketch.LossSketch` in its kept tails and at
  its grid's edges.

The estimators call these operations instead of asking which kind they were given.
"""

from __future__ import annotations

from typing import Protocol, TypeAlias

import numpy as np
from numpy.typing import NDArray

from epsstar.statistics._validation import FloatArray

__all__ = ["Atoms", "Losses", "Sample"]

#: Distinct values (ascending) and how often each occurs.
Atoms: TypeAlias = tuple[FloatArray, NDArray[np.int64]]


class Sample(Protocol):
    """A set of losses as the counts and the tail fits read it."""

    @property
    def n(self) -> int:
        """How many losses it stands for."""
        ...

    @property
    def values(self) -> FloatArray | None:
        """Every loss, when they are held in memory (``None`` for a sketch)."""
        ...

    def count_below(self, thresholds: FloatArray) -> tuple[FloatArray, NDArray[np.bool_]]:
        """``#{l ≤ τ}`` at each threshold, and whether that count is exact."""
        ...

    def countable(self, thresholds: FloatArray) -> NDArray[np.bool_]:
        """Whether a test at each threshold, chosen on this sample, is counted exactly on
        other samples like it (for a sketch: exact, with at most half its kept extremes
        beyond the threshold)."""
        ...

    def floor_edges(self, thresholds: FloatArray) -> FloatArray:
        """The largest point at or below each threshold where a sketch of its kind counts
        exactly (a grid edge; the threshold itself when every loss is held)."""
        ...

    def quantiles(self, levels: FloatArray) -> FloatArray:
        """The ``inverted_cdf`` quantile at each level (a sketch: see its own method)."""
        ...

    @property
    def extremes_kept(self) -> int:
        """How many losses :meth:`lowest` and :meth:`highest` can give: every one when they
        are held, a sketch's kept extremes per tail otherwise."""
        ...

    def lowest(self, m: int) -> FloatArray:
        """The ``m`` smallest losses, sorted."""
        ...

    def highest(self, m: int) -> FloatArray:
        """The ``m`` largest losses, sorted."""
        ...

    def body(self, k: int) -> tuple[FloatArray, FloatArray]:
        """Knots and levels of the interpolated empirical CDF between the ``k+1``-th
        smallest and the ``k+1``-th largest loss (:mod:`epsstar.statistics.fitting.tails`)."""
        ...


class Losses(Protocol):
    """One side's losses (training or population) as the estimators read them."""

    @property
    def n(self) -> int:
        """How many losses the side has."""
        ...

    @property
    def values(self) -> FloatArray | None:
        """Every loss in its data set's order, when held in memory (``None`` when
        summarised: the parametric method and the bootstrap need them all)."""
        ...

    @property
    def whole(self) -> Sample:
        """Every loss as one sample (what the full-sample tail fits read)."""
        ...

    @property
    def atoms(self) -> Atoms | None:
        """The distinct losses and their counts (``None`` when a summary has too many)."""
        ...

    @property
    def sample(self) -> FloatArray:
        """Losses for figures: all of them, or a summary's uniform random sample."""
        ...

    def end_repeats(self) -> tuple[int, int]:
        """How often the smallest and the largest loss occur (a summary counts up to its
        ``k``)."""
        ...

    def crossfit_halves(self, index: int, rng: np.random.Generator) -> tuple[Sample, Sample]:
        """The two halves of cross-fitting halving ``index`` (held losses are shuffled with
        ``rng``; a summary brings its own halves)."""
        ...

    def held_out_halves(self, rng: np.random.Generator) -> tuple[Sample, Sample]:
        """(selection, evaluation) halves of the held-out tests (held losses are shuffled
        with ``rng``; a summary brings its own halves)."""
        ...
