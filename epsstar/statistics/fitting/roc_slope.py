"""The slope of the binormal ROC curve of all records: whether the leak has the Gaussian shape.

On the normal-score scale ``Φ⁻¹(rate)`` a binormal ROC curve is a line,
``Φ⁻¹(FPR) = a + b Φ⁻¹(TPR)``. The Gaussian mechanism's test, N(0, 1) against N(μ, 1), has
slope ``b = 1`` (the two sides a shift apart); power-shaped leaks such as the Gamma pairs of
the Epsilon* paper's Appendix B have ``b > 1``. The slope is read from every record: the
population's losses are mapped to normal scores ``z = Φ⁻¹(F_train(x))`` on the members' fit
(:func:`~epsstar.statistics.fitting.tails.fit_relative_tails`), whose standard deviation is
``1/b``. Its standard error on the log scale is taken as ``sqrt(1/(2m) + 1/(2n))`` for ``m``
training and ``n`` population records (a normal sample's log standard deviation has
``1/sqrt(2n)``, and the members' fit brings its own). Being read on normal scores of a fit
that follows any positive affine map of the losses, the slope is the same on any such map.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

import numpy as np
from scipy import special

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.fitting.tails import fit_relative_tails
from epsstar.statistics.summaries.loss_sketch import SampleLike, as_sample

__all__ = ["SLOPE_ERRORS", "SLOPE_MARGIN", "RocSlope", "fewest_records_a_side", "roc_slope"]

#: How far from 1 the binormal ROC curve's slope may lie, on the log scale, for a leak to be
#: read as the Gaussian mechanism's shape (:attr:`RocSlope.near_one`). A choice, not a
#: derived value: at 10,000 records a side it passes 93-100 % of Gaussian-mechanism draws
#: and no Appendix-B Gamma draw with d ≥ 1 (``benchmarks/roc_shape_checks.py``;
#: docs/accuracy.md, "A curve that holds both"); no other margin was measured.
SLOPE_MARGIN: Final = 0.05
#: Standard errors the log slope must keep inside :data:`SLOPE_MARGIN`.
SLOPE_ERRORS: Final = 2.0


@dataclass(frozen=True, slots=True)
class RocSlope:
    """The binormal ROC curve's slope ``exp(log_slope)`` and its log's standard error."""

    log_slope: float
    standard_error: float

    @property
    def slope(self) -> float:
        return math.exp(self.log_slope)

    @property
    def near_one(self) -> bool:
        """Whether ``|log slope|`` plus :data:`SLOPE_ERRORS` standard errors is below
        :data:`SLOPE_MARGIN`: an equivalence check, which too few records cannot pass."""
        return abs(self.log_slope) + SLOPE_ERRORS * self.standard_error < SLOPE_MARGIN

    @property
    def can_pass(self) -> bool:
        """Whether the records are enough for :attr:`near_one` to hold at a slope of exactly 1:
        :data:`SLOPE_ERRORS` standard errors below :data:`SLOPE_MARGIN`."""
        return SLOPE_ERRORS * self.standard_error < SLOPE_MARGIN

    def describe(self) -> str:
        """``slope of the binormal ROC curve 1.01 ± 0.02``: the slope and its standard error."""
        return (
            f"slope of the binormal ROC curve {self.slope:.2f} ± "
            f"{self.slope * self.standard_error:.2f}"
        )


def fewest_records_a_side() -> int:
    """The fewest records a side (as many on each) with which the check can pass: the least
    ``n > (SLOPE_ERRORS / SLOPE_MARGIN)²``, where ``SLOPE_ERRORS * sqrt(1/n)`` is below the
    margin."""
    return math.floor((SLOPE_ERRORS / SLOPE_MARGIN) ** 2) + 1


def roc_slope(train: SampleLike, population: SampleLike) -> RocSlope:
    """The slope of the binormal ROC curve of every training and population loss (module doc);
    either side may be losses held as :class:`~epsstar.statistics.summaries.loss_values.LossValues`,
    whose sorted order is then reused."""
    members, others = as_sample(train), as_sample(population)
    values = others.values
    if values is None:
        raise InvalidInputError(
            "the slope of the ROC curve reads every population loss. Found a summary's sketch."
        )
    fit = fit_relative_tails(members, others)[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        scores = special.ndtri_exp(np.minimum(fit.logcdf(values), 0.0))
    spread = float(np.std(scores[np.isfinite(scores)]))
    error = math.sqrt(0.5 / others.n + 0.5 / members.n)
    return RocSlope(log_slope=-math.log(spread) if spread > 0 else math.inf, standard_error=error)
