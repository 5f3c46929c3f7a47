"""One side's losses summarised, for data sets too large to hold every loss.

A :class:`LossSummary` of ``n`` losses holds what the estimator reads of them, in a size
that grows with ``sqrt(n)`` (the tails) and not with ``n``:

* the :class:`~epsstar.statistics.summaries.loss_sketch.LossSketch` of each half of the
  cross-fitting
  halving(s) and of the held-out tests' halving, whose merge is the sketch of the whole;
* the distinct values with their counts while there are at most ``k`` of them (losses on a
  few values are audited by the exact empirical estimate, which these counts give);
* a uniform random sample of the losses (for figures).

Which half a record falls in is decided by a seeded hash of its **position** in its data
set (splitmix64 of the position plus a key drawn from the seed), not by a permutation of
all positions: the halves of any stretch of rows can then be sketched where they are read
and merged later, and a summary of a data set's partitions equals the summary of the
whole (:func:`merge_summaries`). The halves are still random and independent of the
losses, which is all the cross-fitting and the held-out tests ask of them; they hold
``n/2 ± O(sqrt(n))`` records instead of exactly ``⌊n/2⌋``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import FloatArray, finite_vector
from epsstar.statistics.summaries.loss_sketch import (
    BINS,
    HALF_WIDTH,
    LossSketch,
    merge_sketches,
    sketch_losses,
)
from epsstar.statistics.summaries.loss_values import LossValues
from epsstar.statistics.summaries.protocols import Atoms, Losses
from epsstar.statistics.summaries.tail_size import default_tail_size

__all__ = [
    "CROSSFIT_STREAM",
    "HELD_OUT_STREAM",
    "MAX_LOSS",
    "SAMPLE_SIZE",
    "LossSummary",
    "LossesLike",
    "SummaryPlan",
    "as_losses",
    "check_loss_range",
    "merge_summaries",
    "position_hashes",
    "summarise_losses",
]

#: Hash streams of the cross-fitting halvings and of the held-out tests' halving.
CROSSFIT_STREAM: Final = 0xC0F1
HELD_OUT_STREAM: Final = 7
SAMPLE_STREAM: Final = 0x5A
#: Values a summary's sketches hold exactly per tail, in tail sizes of the pooled fit.
EXACT_TAIL_FACTOR: Final = 8
#: Losses per side a summary keeps as its random sample (for figures), about.
SAMPLE_SIZE: Final = 100_000

_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def _key(seed: int, side: int, stream: int, index: int = 0) -> np.uint64:
    state = np.random.SeedSequence([seed, side, stream, index]).generate_state(2, np.uint64)
    return np.uint64(state[0])


def position_hashes(offset: int, n: int, key: np.uint64) -> NDArray[np.uint64]:
    """splitmix64 of ``position + key`` for the positions ``offset … offset + n - 1``."""
    x = np.arange(offset, offset + n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        x += key
        x = (x ^ (x >> np.uint64(30))) * _M1
        x = (x ^ (x >> np.uint64(27))) * _M2
    return np.asarray(x ^ (x >> np.uint64(31)), dtype=np.uint64)


@dataclass(frozen=True, slots=True)
class SummaryPlan:
    """How one side is summarised: the ``seed``, which ``side`` (0 training, 1 population:
    each has its own hash keys), the extremes kept per sketch (``k``), the cross-fitting
    halvings (``n_splits``) and the fraction of records sampled."""

    seed: int
    side: int
    k: int
    n_splits: int = 1
    sample_rate: float = 1.0

    @classmethod
    def for_rows(
        cls, n_train: int, n_population: int, *, seed: int, n_splits: int = 1
    ) -> tuple[SummaryPlan, SummaryPlan]:
        """The plans of both sides of an audit with these row counts: ``k`` is
        :data:`EXACT_TAIL_FACTOR` times the tail size of the pooled fit (the largest a fit
        takes), so that the fits' tails and the body next to them are exact; the sample
        about :data:`SAMPLE_SIZE` records per side."""
        k = EXACT_TAIL_FACTOR * default_tail_size(n_train + n_population) + 2

        def plan(side: int, rows: int) -> SummaryPlan:
            return cls(seed, side, k, n_splits, min(1.0, SAMPLE_SIZE / max(rows, 1)))

        return plan(0, n_train), plan(1, n_population)

    def halves(self, stream: int, index: int, offset: int, n: int) -> NDArray[np.bool_]:
        """Whether each of the positions ``offset …`` is in the first half of a halving."""
        bits = position_hashes(offset, n, _key(self.seed, self.side, stream, index))
        return np.asarray((bits >> np.uint64(63)) == 0)

    def sampled(self, offset: int, n: int) -> NDArray[np.bool_]:
        """Whether each of the positions ``offset …`` is in the random sample."""
        bits = position_hashes(offset, n, _key(self.seed, self.side, SAMPLE_STREAM))
        limit = math.floor(self.sample_rate * 2.0**53)
        return np.asarray((bits >> np.uint64(11)) < np.uint64(limit))


@dataclass(frozen=True, slots=True)
class LossSummary:
    """``n`` losses as the estimator reads them (module doc): the sketches of each
    halving's two halves, the distinct values and their counts (``None`` past ``k`` of
    them), a random sample in position order, and the plan that made it. One side's
    :class:`~epsstar.statistics.summaries.protocols.Losses`, as
    :class:`~epsstar.statistics.summaries.loss_values.LossValues` are."""

    n: int
    crossfit: tuple[tuple[LossSketch, LossSketch], ...]
    held_out: tuple[LossSketch, LossSketch]
    atoms: Atoms | None
    sample: FloatArray = field(repr=False)
    plan: SummaryPlan
    #: The sketch of every loss, merged from the halves when first read (so a partition's
    #: summary is sent without it).
    _whole: LossSketch | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def whole(self) -> LossSketch:
        """The sketch of all ``n`` losses (the merge of the held-out halves' sketches)."""
        if self._whole is None:
            object.__setattr__(self, "_whole", merge_sketches(list(self.held_out)))
        assert self._whole is not None
        return self._whole

    @property
    def nbytes(self) -> int:
        sketches = [s for pair in (*self.crossfit, self.held_out) for s in pair]
        atoms = 0 if self.atoms is None else self.atoms[0].nbytes + self.atoms[1].nbytes
        return sum(s.nbytes for s in sketches) + atoms + self.sample.nbytes

    @property
    def values(self) -> None:
        """A summary does not hold every loss."""
        return None

    def end_repeats(self) -> tuple[int, int]:
        """How often the smallest and the largest loss occur, counted up to ``k``."""
        whole = self.whole
        low, high = whole.lowest(min(whole.k, whole.n)), whole.highest(min(whole.k, whole.n))
        return int(np.count_nonzero(low == low[0])), int(np.count_nonzero(high == high[-1]))

    def crossfit_halves(
        self, index: int, rng: np.random.Generator
    ) -> tuple[LossSketch, LossSketch]:
        """The sketches of cross-fitting halving ``index`` (``rng`` is not used: the halves
        were drawn by the plan)."""
        if index >= len(self.crossfit):
            raise InvalidInputError(
                f"the summary holds {len(self.crossfit)} cross-fitting halvings. Found a "
                f"request for halving {index + 1}."
            )
        return self.crossfit[index]

    def held_out_halves(self, rng: np.random.Generator) -> tuple[LossSketch, LossSketch]:
        """The sketches of the held-out tests' halves (``rng`` is not used)."""
        return self.held_out


#: One side's losses as functions take them: an array or a :class:`~.protocols.Losses`
#: (:class:`~.loss_values.LossValues` or :class:`LossSummary`).
LossesLike: TypeAlias = ArrayLike | Losses


def as_losses(values: LossesLike, name: str, *, min_size: int = 1) -> Losses:
    """``values`` as one side's :class:`~epsstar.statistics.summaries.protocols.Losses`: a
    summary or held losses as they are, anything else as an array of losses, checked
    (finite, 1-D, at least ``min_size``; a refusal names ``name``) and held in
    :class:`~epsstar.statistics.summaries.loss_values.LossValues`."""
    if isinstance(values, LossSummary | LossValues):
        return values
    return LossValues(check_loss_range(name, finite_vector(name, values, min_size=min_size)))


#: The largest loss magnitude the statistics take. Fits sum squares and spans of losses, and
#: above about 1e154 a square overflows float64 (numpy would print raw "overflow
#: encountered" warnings and carry inf on); a model's logit loss is at most about its
#: logit's size, below 3.4e38 for float32 outputs, so no real loss comes near the bound.
MAX_LOSS: Final[float] = 1e100


def check_loss_range(name: str, values: FloatArray) -> FloatArray:
    """``values`` when every finite one lies within ±:data:`MAX_LOSS`; else a one-line
    refusal naming the first that does not (infinite values are refused elsewhere)."""
    with np.errstate(invalid="ignore"):
        outside = np.isfinite(values) & (np.abs(values) > MAX_LOSS)
    if outside.any():
        index = int(np.flatnonzero(outside)[0])
        raise InvalidInputError(
            f"{name} must lie within ±{MAX_LOSS:g}, where sums of their squares stay finite (a "
            f"model's logit loss is about its logit's size); {int(outside.sum())} value(s) do "
            f"not, the first at index {index}. Found {values[index]:g}."
        )
    return values


def _sketch(values: FloatArray, plan: SummaryPlan) -> LossSketch:
    return sketch_losses(values, plan.k) if values.size else _empty(plan)


def _empty(plan: SummaryPlan) -> LossSketch:
    none = np.empty(0)
    return LossSketch(0, plan.k, none, none, np.zeros(BINS + 2, np.int64), BINS, HALF_WIDTH)


def _halved(
    values: FloatArray, first: NDArray[np.bool_], plan: SummaryPlan
) -> tuple[LossSketch, LossSketch]:
    return _sketch(values[first], plan), _sketch(values[~first], plan)


def summarise_losses(losses: FloatArray, plan: SummaryPlan, *, offset: int = 0) -> LossSummary:
    """The summary of ``losses``, the records at positions ``offset …`` of their data set."""
    values = np.asarray(losses, dtype=np.float64).reshape(-1)
    check_loss_range("losses", values)
    n = values.size
    crossfit = tuple(
        _halved(values, plan.halves(CROSSFIT_STREAM, index, offset, n), plan)
        for index in range(plan.n_splits)
    )
    held_out = _halved(values, plan.halves(HELD_OUT_STREAM, 0, offset, n), plan)
    distinct, counts = np.unique(values, return_counts=True)
    atoms = (distinct, counts.astype(np.int64)) if distinct.size <= plan.k else None
    return LossSummary(n, crossfit, held_out, atoms, values[plan.sampled(offset, n)], plan)


def _merged_atoms(
    parts: Sequence[LossSummary], k: int
) -> tuple[FloatArray, NDArray[np.int64]] | None:
    if any(part.atoms is None for part in parts):
        return None
    values = np.concatenate([part.atoms[0] for part in parts if part.atoms is not None])
    counts = np.concatenate([part.atoms[1] for part in parts if part.atoms is not None])
    distinct, where = np.unique(values, return_inverse=True)
    if distinct.size > k:
        return None
    return distinct, np.bincount(where, weights=counts, minlength=distinct.size).astype(np.int64)


def merge_summaries(parts: Sequence[LossSummary]) -> LossSummary:
    """The summary of the records of ``parts`` (consecutive stretches of one data set,
    summarised with one plan, in order)."""
    if not parts:
        raise InvalidInputError("summaries to merge must be at least one. Found 0.")
    plan = parts[0].plan
    if any(part.plan != plan for part in parts):
        raise InvalidInputError("summaries must share their plan to merge.")
    crossfit = tuple(
        (
            merge_sketches([part.crossfit[i][0] for part in parts]),
            merge_sketches([part.crossfit[i][1] for part in parts]),
        )
        for i in range(plan.n_splits)
    )
    held_out = (
        merge_sketches([part.held_out[0] for part in parts]),
        merge_sketches([part.held_out[1] for part in parts]),
    )
    return LossSummary(
        sum(part.n for part in parts),
        crossfit,
        held_out,
        _merged_atoms(parts, plan.k),
        np.concatenate([part.sample for part in parts]),
        plan,
    )
