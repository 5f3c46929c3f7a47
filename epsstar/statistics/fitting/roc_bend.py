"""Whether a binormal ROC curve of slope 1 keeps its shift into the tails.

The slope check (:mod:`epsstar.statistics.fitting.roc_slope`) reads the whole curve, which its
body decides. A shift of a heavy-tailed law (Student t, logistic, Laplace) has slope 1 there
too, but its likelihood ratio levels off in the tails, so its ROC curve bends back towards the
diagonal at the ends that decide Epsilon* at small δ, where the Gaussian mechanism's keeps
its shift. At each end the equal-variance binormal curve's shift is fitted twice on the side
that :func:`~epsstar.statistics.fitting.binormal_tails.fit_binormal_roc` fits: on the end's
outer quarter of that side's records (:data:`~.binormal_tails.BINORMAL_FIT_SHARE`) and on its
half (:data:`~.binormal_tails.SHIFT_ROC_FIT_SHARE`). A curve that bends puts the quarter's
shift below the half's.

The difference is read in standard errors. A truncated normal's shift fitted on ``n_s`` records
cut at its own quantile ``s`` has the variance ``1 / (n_s V(s))``, with the truncated normal's
variance ``V(s) = 1 - a λ - λ²`` at ``a = Φ⁻¹(s)``, ``λ = φ(a) / s`` (the Fisher information of
the shift); the quarter's records are among the half's and the half's estimate is the more
efficient, so the difference has the difference of the two variances. The normal scores are
read on the reference side's fit, whose own sampling error enters as much again for sides of
equal size: the variance is scaled by ``1 + m / n_ref`` for ``m`` fitted and ``n_ref``
reference records (at 10,000 a side the statistic's spread on Gaussian-mechanism draws is
0.9-1.1 with the scaling, and the unscaled error was 1.2-1.6 times too small;
``benchmarks/roc_shape_checks.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from scipy import special

from epsstar.statistics.fitting.binormal_tails import (
    BINORMAL_FIT_SHARE,
    SHIFT_ROC_FIT_SHARE,
    fit_binormal_roc,
    fit_shift_roc,
    reaching_sides,
)
from epsstar.statistics.summaries.loss_sketch import SampleLike, as_sample

__all__ = ["BEND_ERRORS", "TailBend", "tail_bend"]

#: Standard errors by which the outer quarter's shift may lie below the half's before the
#: curve is read as bending (one-sided: only a bend towards the diagonal makes the straight
#: curve overshoot). A choice: at 10,000 records a side it lets 99-100 % of the
#: Gaussian-mechanism draws that pass the slope check through, stops every shifted Student t
#: (3 and 5 degrees of freedom) and Laplace draw, and 44 % of the logistic shift's
#: (``benchmarks/roc_shape_checks.py``; docs/accuracy.md, "The method tails-shape-tested").
BEND_ERRORS: Final = 2.5


@dataclass(frozen=True, slots=True)
class TailBend:
    """At the lower and upper end, the outer quarter's shift minus the half's, in standard
    errors (negative: the curve bends towards the diagonal)."""

    lower: float
    upper: float

    @property
    def straight(self) -> bool:
        """Whether neither end's quarter lies :data:`BEND_ERRORS` standard errors below its half."""
        return min(self.lower, self.upper) > -BEND_ERRORS

    def describe(self) -> str:
        """``outer-quarter shift -0.3 (lower) and +1.1 (upper) standard errors from the half's``."""
        return (
            f"outer-quarter shift {self.lower:+.1f} (lower end) and {self.upper:+.1f} (upper end) "
            "standard errors from the half's"
        )


def tail_bend(train: SampleLike, population: SampleLike) -> TailBend:
    """The bend of the equal-variance binormal ROC curve of every loss (module doc)."""
    sides = as_sample(train), as_sample(population)
    half = fit_shift_roc(*sides)
    quarter = fit_binormal_roc(*sides, fit_share=BINORMAL_FIT_SHARE, scale_share=None)
    found = []
    for end, reference in zip(("lower", "upper"), reaching_sides(*sides), strict=True):
        fitted = 1 - reference
        difference = getattr(quarter[fitted], end).shift - getattr(half[fitted], end).shift
        error = _difference_error(sides[fitted].n, sides[reference].n)
        found.append(difference / error)
    return TailBend(found[0], found[1])


def _difference_error(m: int, n_reference: int) -> float:
    """The standard error of the quarter's shift minus the half's for ``m`` fitted records."""
    quarter = math.floor(BINORMAL_FIT_SHARE * m)
    half = (m - 2) // 2
    variance = 1.0 / (quarter * _truncated_variance(BINORMAL_FIT_SHARE)) - 1.0 / (
        half * _truncated_variance(SHIFT_ROC_FIT_SHARE)
    )
    return math.sqrt(max(variance, 0.0) * (1.0 + m / n_reference))


def _truncated_variance(share: float) -> float:
    """The variance of N(0, 1) truncated to its lower ``share``: ``1 - a λ - λ²``."""
    a = float(special.ndtri(share))
    ratio = math.exp(-0.5 * a * a) / math.sqrt(2.0 * math.pi) / share
    return 1.0 - a * ratio - ratio * ratio
