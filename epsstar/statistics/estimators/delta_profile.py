"""Epsilon* as a function of δ, from a well-supported δ down to the chosen one.

Epsilon*(δ) (eq. 7 of Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models")
only counts tests whose FPR and FNR exceed δ, so the smaller δ the farther into the tails the
maximising test moves. At δ ≥ 10/n every admissible rate is held by at least ten records of data; at
the paper's δ = 1/(n ln n) < 1/n it can be a rate no record shows, where the estimate is the fitted
tail's extrapolation. The profile re-estimates Epsilon* by the same method at geometrically spaced δ
between ``10/n`` and the chosen δ (two per decade, both ends included) and records, at each, which
of the test's rates lie below one record's worth of data
(:attr:`~epsstar.statistics.results.EpsilonStarResult.unsupported_rates`): a reader sees how much of
the headline the data hold and how much is extrapolation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.statistics.results import EpsilonStarResult

__all__ = ["DeltaPoint", "delta_grid", "epsilon_by_delta"]

#: Points per decade of δ.
PER_DECADE = 2
#: The largest δ of a profile: rates above this many records per side.
SUPPORTED_RECORDS = 10


@dataclass(frozen=True, slots=True)
class DeltaPoint(JsonRecord):
    """Epsilon* at one δ, the test that attains it, and the rates the data do not hold."""

    delta: float
    epsilon: float = field(metadata=json_rule(name="epsilon_star"))
    fpr: float
    fnr: float
    unsupported_rates: tuple[str, ...]

    @json_property()
    def supported(self) -> bool:
        """Every rate of the maximising test is held by at least one record."""
        return not self.unsupported_rates


def delta_grid(delta: float, n_train: int) -> tuple[float, ...]:
    """δ from ``min(10/n, 0.1)`` down to ``delta`` (both included), two per decade.

    Just ``(delta,)`` when ``delta`` is already at or above the well-supported end, or 0
    (which the empirical method accepts).
    """
    top = min(SUPPORTED_RECORDS / n_train, 0.1)
    if not 0.0 < delta < top:
        return (delta,)
    points = max(2, math.ceil(PER_DECADE * math.log10(top / delta)) + 1)
    grid = np.geomspace(top, delta, points)
    grid[-1] = delta
    return tuple(float(value) for value in grid)


def epsilon_by_delta(results: Sequence[EpsilonStarResult]) -> tuple[DeltaPoint, ...]:
    """The estimates at the δ of :func:`delta_grid`, in order, as :class:`DeltaPoint` records."""
    return tuple(
        DeltaPoint(
            delta=result.delta,
            epsilon=result.epsilon,
            fpr=result.fpr,
            fnr=result.fnr,
            unsupported_rates=result.unsupported_rates,
        )
        for result in results
    )
