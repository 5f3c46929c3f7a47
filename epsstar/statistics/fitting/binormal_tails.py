"""Binormal tails: each side's tail a normal shift of the pooled sample's, on the normal-score
scale.

:class:`~epsstar.statistics.fitting.tails.RelativeTailed` makes each side's tail a power of a
pooled fit ``G`` (``F_side ∝ G^gamma``): between the two sides, the power ROC curve
``FPR = TPR^c``, exact for power-law tails such as the Gamma pairs of the Epsilon* paper's
Appendix B near 0. The Gaussian mechanism's test, N(0, 1) against N(μ, 1), has a binormal
ROC curve instead: on the normal-score scale ``z = Φ⁻¹(G(x))`` the two sides are normals a
shift apart. :class:`BinormalTailed` takes that shape: beyond its own ``k``-th most extreme
loss, a side's lower tail is::

    F(x) = (k/n) * Φ(z(x) - m) / Φ(z(u_low) - m),    z(x) = Φ⁻¹(G(x))

and its upper tail the same on the upper normal score ``Φ⁻¹(1 - G(x))`` with a shift of its
own. A monotone change of the loss scale changes neither ``z``'s order nor the ROC curve, so
the model is the binormal ROC curve of signal detection (equal variances), whatever scale the
losses are on. The shift ``m`` is the maximum-likelihood mean of a unit-variance normal
truncated at the side's :data:`BINORMAL_FIT_SHARE` quantile, fitted to the normal scores of
that share of its most extreme records: under the model the whole share is a shifted normal,
and fitting it there instead of on the ``k`` records of the tail alone cuts the noise of the
shift, which extrapolating three decades below the data multiplies.

Neither model is right for every shape, and at 10,000 records a side the data cannot tell
them apart reliably (docs/accuracy.md, "Weak leaks: the Gaussian mechanism's shape"): the
default estimator keeps the power tails; these are measured beside them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, special

from epsstar.plumbing.records.json_records import json_rule
from epsstar.statistics._validation import FloatArray, check_in_range
from epsstar.statistics.fitting.tails import TailedEmpirical, _BodyWithTails, _split
from epsstar.statistics.summaries.loss_sketch import SampleLike, as_sample, pooled

__all__ = ["BINORMAL_FIT_SHARE", "BinormalTailed", "fit_binormal_tails", "truncated_normal_shift"]

#: The share of each side's most extreme records on each end its normal shift is fitted to.
BINORMAL_FIT_SHARE = 0.25


def truncated_normal_shift(scores: ArrayLike, cut: float) -> float:
    """Maximum-likelihood mean ``m`` of N(m, 1) truncated to ``(-inf, cut]``, from ``scores``.

    The truncated normal is an exponential family in ``m``: its likelihood is concave and
    its maximum solves ``mean(scores) = m - φ(cut - m) / Φ(cut - m)``, the truncated mean,
    which increases from ``-inf`` to ``cut`` with ``m``. Scores all at ``cut`` have no
    finite estimate; their gap to ``cut`` is taken as :data:`_SMALLEST_GAP`.
    """
    z = np.asarray(scores, dtype=np.float64)
    z = z[np.isfinite(z)]
    if z.size == 0:
        return 0.0
    mean = float(np.mean(z))
    gap = max(cut - mean, _SMALLEST_GAP)

    def excess(m: float) -> float:
        # φ(a) / Φ(a) = sqrt(2/π) / erfcx(-a/√2), exact without underflow for any a.
        mills = math.sqrt(2.0 / math.pi) / float(special.erfcx((m - cut) / math.sqrt(2.0)))
        return m - mills - (cut - gap)

    # At m = cut + 2/gap + 10 the truncated mean is above cut - gap/2; at mean - 1 below mean.
    return float(optimize.brentq(excess, mean - 1.0, cut + 2.0 / gap + 10.0, xtol=1e-10))


#: The gap to the cut of scores all at it (their estimate's largest value is about 1/gap).
_SMALLEST_GAP = 1e-6


@dataclass(frozen=True, slots=True)
class _Scores:
    """A side's normal scores on one end: the score of its threshold ``u`` and its shift."""

    at_threshold: float
    shift: float

    @property
    def log_mass_at_threshold(self) -> float:
        return float(special.log_ndtr(self.at_threshold - self.shift))


@dataclass(frozen=True, slots=True, eq=False)
class BinormalTailed(_BodyWithTails):
    """One side: its own interpolated empirical CDF, tails normal shifts of a pooled fit's on
    the normal-score scale (module doc)."""

    json_constants: ClassVar[Mapping[str, str]] = {"family": "binormal-tails"}

    knots: FloatArray = field(metadata=json_rule(skip=True))
    levels: FloatArray = field(metadata=json_rule(skip=True))
    n: int
    tail_mass: float
    shift_low: float = field(metadata=json_rule(name="lower_shift"))
    shift_high: float = field(metadata=json_rule(name="upper_shift"))
    reference: TailedEmpirical
    #: The reference's normal scores at ``u_low`` and (upper) at ``u_high``, fixed at the fit.
    score_at_low: float = field(metadata=json_rule(skip=True))
    score_at_high: float = field(metadata=json_rule(skip=True))

    @classmethod
    def fit(
        cls,
        values: SampleLike,
        reference: TailedEmpirical,
        *,
        tail_size: int | None = None,
        tail_scale: float = 1.0,
        fit_share: float = BINORMAL_FIT_SHARE,
    ) -> BinormalTailed:
        """Fit one side against ``reference`` (a fit to the pooled sample). A summary of
        losses too many to hold keeps only its most extreme values, and is refused when its
        ``fit_share`` is more than those."""
        fit_share = check_in_range("fit_share", fit_share, 0.0, 0.5)
        ends = _split(values, tail_size, tail_scale)
        k = ends.k
        wide = min(max(k, math.floor(fit_share * ends.n)), (ends.n - 2) // 2)
        sample = as_sample(values)
        lower = _end(reference.logcdf, sample.lowest(wide + 1), ends.lowest[k])
        upper = _end(reference.logsf, sample.highest(wide + 1)[::-1], ends.highest[0])
        return cls(
            knots=ends.knots,
            levels=ends.levels,
            n=ends.n,
            tail_mass=k / ends.n,
            shift_low=lower.shift,
            shift_high=upper.shift,
            reference=reference,
            score_at_low=lower.at_threshold,
            score_at_high=upper.at_threshold,
        )

    def _log_tails(self, x: FloatArray) -> tuple[FloatArray, FloatArray]:
        """log F(x) from the lower-tail model and log(1 - F(x)) from the upper one."""
        log_mass = math.log(self.tail_mass)
        low = log_mass + _log_share(self.reference.logcdf(x), self._lower)
        high = log_mass + _log_share(self.reference.logsf(x), self._upper)
        return low, high

    def _tail_quantiles(
        self, lower_q: FloatArray, upper_q: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        log_mass = math.log(self.tail_mass)
        with np.errstate(divide="ignore"):
            low_p = _reference_level(np.log(lower_q) - log_mass, self._lower)
            high_p = _reference_level(np.log(upper_q) - log_mass, self._upper)
        return self.reference.ppf(low_p), self.reference.isf(high_p)

    @property
    def _lower(self) -> _Scores:
        return _Scores(self.score_at_low, self.shift_low)

    @property
    def _upper(self) -> _Scores:
        return _Scores(self.score_at_high, self.shift_high)


def _end(
    log_level: Callable[[ArrayLike], FloatArray], extremes: FloatArray, threshold: float
) -> _Scores:
    """One end of one side: ``extremes`` its ``wide + 1`` most extreme values, outermost
    first; ``log_level`` the reference's log CDF (lower end) or log survival (upper end)."""
    scores = special.ndtri_exp(np.minimum(log_level(extremes), 0.0))
    shift = truncated_normal_shift(scores[:-1], float(scores[-1]))
    at_threshold = float(special.ndtri_exp(min(float(log_level(np.array([threshold]))[0]), 0.0)))
    return _Scores(at_threshold, shift)


def _log_share(log_level: FloatArray, end: _Scores) -> FloatArray:
    """log of the side's share of its tail mass beyond a point at the reference's
    ``log_level``: ``log Φ(z - m) - log Φ(z_u - m)``."""
    with np.errstate(invalid="ignore"):
        z = special.ndtri_exp(np.minimum(log_level, 0.0))
    result: FloatArray = special.log_ndtr(z - end.shift) - end.log_mass_at_threshold
    return result


def _reference_level(log_share: FloatArray, end: _Scores) -> FloatArray:
    """The reference's level (CDF or survival) where the side's share of its tail mass is
    ``exp(log_share)``; the inverse of :func:`_log_share`."""
    target = np.minimum(log_share + end.log_mass_at_threshold, 0.0)
    z = end.shift + special.ndtri_exp(target)
    result: FloatArray = np.exp(special.log_ndtr(z))
    return result


def fit_binormal_tails(
    train: SampleLike,
    population: SampleLike,
    *,
    tail_size: int | None = None,
    tail_scale: float = 1.0,
    fit_share: float = BINORMAL_FIT_SHARE,
) -> tuple[BinormalTailed, BinormalTailed]:
    """Both sides against one reference fitted to the pooled sample (see the module doc);
    ``tail_size`` and ``tail_scale`` as for
    :func:`~epsstar.statistics.fitting.tails.fit_relative_tails`."""
    reference = TailedEmpirical.fit(pooled(train, population), tail_scale=tail_scale)
    return (
        BinormalTailed.fit(
            train, reference, tail_size=tail_size, tail_scale=tail_scale, fit_share=fit_share
        ),
        BinormalTailed.fit(
            population, reference, tail_size=tail_size, tail_scale=tail_scale, fit_share=fit_share
        ),
    )
