"""Losses held in memory: every value, read through the operations of
:mod:`epsstar.statistics.summaries.protocols`.

:class:`LossValues` is both one side's :class:`~.protocols.Losses` and a
:class:`~.protocols.Sample`: its halves are random halves of its values (shuffled with
the generator the caller passes, so a seed fixes them), and it counts, takes quantiles and
reads extremes from its values sorted once, on first use. The counts are exact at every
threshold.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import DTypeLike, NDArray

from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.summaries.protocols import Atoms

__all__ = ["LossValues", "empirical_counts", "sorted_body"]


def _last_of_runs(ascending: FloatArray) -> NDArray[np.bool_]:
    """Where each run of equal values of the sorted ``ascending`` ends (its last position):
    the distinct values without sorting again, as ``np.unique`` would."""
    last = np.ones(ascending.size, dtype=bool)
    np.not_equal(ascending[1:], ascending[:-1], out=last[:-1])
    return last


def sorted_body(x: FloatArray, k: int) -> tuple[FloatArray, FloatArray]:
    """Knots and levels of the interpolated empirical CDF of the sorted sample ``x``
    without its ``k`` smallest and ``k`` largest values.

    Its CDF runs linearly from ``k/n`` to ``1 - k/n`` over the ``n - 2k`` values left; where
    values tie, one knot per distinct value keeps the last level reached at it.
    """
    n = x.size
    levels = np.linspace(k / n, 1.0 - k / n, n - 2 * k)
    body = x[k : n - k]
    last = _last_of_runs(body)
    return body[last], levels[last]


def empirical_counts(
    train_losses: FloatArray, population_losses: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Distinct losses ascending, with #population ≤ τ and #train ≤ τ at each."""
    train = np.sort(train_losses)
    population = np.sort(population_losses)
    thresholds = np.unique(np.concatenate([train, population]))
    pop_below = np.searchsorted(population, thresholds, side="right").astype(np.float64)
    train_below = np.searchsorted(train, thresholds, side="right").astype(np.float64)
    return thresholds, pop_below, train_below


@dataclass(frozen=True, slots=True, eq=False)
class LossValues:
    """Finite 1-D losses, every one held, in their data set's order.

    The caller checks the values (:func:`~epsstar.statistics.summaries.loss_summary.as_losses`
    does); they are read, never changed.
    """

    values: FloatArray = field(repr=False)
    _sorted: FloatArray | None = field(default=None, init=False, repr=False)
    _atoms: Atoms | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", np.asarray(self.values, dtype=np.float64).reshape(-1))

    def __array__(self, dtype: DTypeLike | None = None, copy: bool | None = None) -> FloatArray:
        """The values, so that numpy functions take a :class:`LossValues` as an array."""
        array = self.values if dtype is None else self.values.astype(dtype)
        return np.array(array, copy=True) if copy else array

    @property
    def n(self) -> int:
        return int(self.values.size)

    @property
    def ascending(self) -> FloatArray:
        """The values in ascending order (sorted on first use)."""
        if self._sorted is None:
            object.__setattr__(self, "_sorted", np.sort(self.values))
        assert self._sorted is not None
        return self._sorted

    # --- one side's losses -----------------------------------------------------------------

    @property
    def whole(self) -> LossValues:
        return self

    @property
    def atoms(self) -> Atoms:
        """The distinct values and their counts (computed on first use)."""
        if self._atoms is None:
            ascending = self.ascending
            ends = np.flatnonzero(_last_of_runs(ascending))
            counts = np.diff(ends, prepend=-1).astype(np.int64)
            object.__setattr__(self, "_atoms", (ascending[ends], counts))
        assert self._atoms is not None
        return self._atoms

    @property
    def sample(self) -> FloatArray:
        return self.values

    def end_repeats(self) -> tuple[int, int]:
        values = self.values
        return (
            int(np.count_nonzero(values == values.min())),
            int(np.count_nonzero(values == values.max())),
        )

    def crossfit_halves(
        self, index: int, rng: np.random.Generator
    ) -> tuple[LossValues, LossValues]:
        """A random halving drawn from ``rng`` (``index`` numbers it; each call draws anew)."""
        return self._halves(rng)

    def held_out_halves(self, rng: np.random.Generator) -> tuple[LossValues, LossValues]:
        """A random halving drawn from ``rng``: (selection, evaluation)."""
        return self._halves(rng)

    def _halves(self, rng: np.random.Generator) -> tuple[LossValues, LossValues]:
        shuffled = rng.permutation(self.values)
        half = shuffled.size // 2
        return LossValues(shuffled[:half]), LossValues(shuffled[half:])

    # --- a sample --------------------------------------------------------------------------

    def count_below(self, thresholds: FloatArray) -> tuple[FloatArray, NDArray[np.bool_]]:
        taus = np.asarray(thresholds, dtype=np.float64)
        counts = np.searchsorted(self.ascending, taus, side="right").astype(np.float64)
        return counts, np.ones(taus.shape, dtype=bool)

    def countable(self, thresholds: FloatArray) -> NDArray[np.bool_]:
        return np.ones(np.shape(thresholds), dtype=bool)

    def floor_edges(self, thresholds: FloatArray) -> FloatArray:
        return np.asarray(thresholds, dtype=np.float64)

    def quantiles(self, levels: FloatArray) -> FloatArray:
        return np.asarray(np.quantile(self.ascending, levels, method="inverted_cdf"), np.float64)

    @property
    def extremes_kept(self) -> int:
        return self.n

    def lowest(self, m: int) -> FloatArray:
        self._check_kept(m)
        return self.ascending[:m]

    def highest(self, m: int) -> FloatArray:
        self._check_kept(m)
        return self.ascending[self.n - m :]

    def _check_kept(self, m: int) -> None:
        if not 0 <= m <= self.n:
            raise InvalidInputError(f"there are {self.n} losses. Found a request for {m}.")

    def body(self, k: int) -> tuple[FloatArray, FloatArray]:
        return sorted_body(self.ascending, k)
