"""Binormal tails: each side's tail a normal of a reference fit's normal scores.

:class:`~epsstar.statistics.fitting.tails.RelativeTailed` makes each side's tail a power of a
pooled fit ``G`` (``F_side ∝ G^gamma``): between the two sides, the power ROC curve
``FPR = TPR^c``, exact for power-law tails such as the Gamma pairs of the Epsilon* paper's
Appendix B near 0. The Gaussian mechanism's test, N(0, 1) against N(μ, 1), has a binormal
ROC curve instead: on the normal-score scale ``z = Φ⁻¹(R(x))`` of a reference CDF ``R`` the
two sides are normals. :class:`BinormalTailed` takes that shape: beyond its own ``k``-th most
extreme loss, a side's lower tail is::

    F(x) = (k/n) * Φ((z(x) - m) / s) / Φ((z(u_low) - m) / s),    z(x) = Φ⁻¹(R(x))

and its upper tail the same on the upper normal score ``Φ⁻¹(1 - R(x))``, with a shift ``m``
and scale ``s`` of its own. A monotone change of the loss scale changes neither ``z``'s
order nor the ROC curve, so the model is the binormal ROC curve of signal detection,
``Φ⁻¹(FPR) = a + b Φ⁻¹(TPR)``, whatever scale the losses are on; ``s = 1`` on both sides is
its equal-variance form, the Gaussian mechanism's, and a scale ``s ≠ 1`` bends it towards a
power curve's far end (``FPR = TPR^c`` has slope ``b → √c`` there).

The shift and scale are the maximum-likelihood parameters of a normal truncated at the
side's ``fit_share`` quantile, fitted to the normal scores of that share of its most extreme
records (under the model the whole share is a normal); ``scale_share`` fits the scale on a
share of its own (the shift is then refitted at that scale), and ``scale_share=None`` keeps
``s = 1``. Two references:

- :func:`fit_binormal_tails`: one fit to the pooled sample, as the power tails use;
- :func:`fit_binormal_roc`: the other side. At each end the side whose ``k``-th most extreme
  loss lies further out keeps its power tail (:func:`fit_relative_tails`) and the other
  side's tail is a normal of its normal scores: a binormal ROC curve fitted directly, which
  a pooled reference, a mixture of two sides, is not.

Neither shape is right for every leak, and at 10,000 records a side the data cannot tell
them apart (docs/accuracy.md, "Weak leaks: the Gaussian mechanism's shape"): the default
estimator keeps the power tails; ``tails-shape-tested`` takes :func:`fit_shift_roc`, the
directly fitted curve with ``s = 1``, where the binormal ROC curve of all records has slope 1
(:mod:`epsstar.statistics.fitting.roc_slope`). The pooled reference would not do there: the
pool of two shifted normals is wider than either, so its normal scores draw the sides'
bodies together (by ``1/sqrt(1 + μ²/4)`` at the centre) and a shift fitted on the body
understates the curve's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, special

from epsstar.plumbing.records.json_records import JsonRecord, json_rule
from epsstar.statistics._validation import FloatArray, check_in_range
from epsstar.statistics.fitting.tails import (
    RelativeTailed,
    TailedEmpirical,
    _BodyWithTails,
    _Ends,
    _split,
    fit_relative_tails,
)
from epsstar.statistics.summaries.loss_sketch import SampleLike, as_sample, pooled

__all__ = [
    "BINORMAL_FIT_SHARE",
    "BinormalEnd",
    "BinormalTailed",
    "fit_binormal_roc",
    "fit_binormal_tails",
    "fit_shift_roc",
    "reaching_sides",
    "truncated_normal_fit",
    "truncated_normal_shift",
]

#: The share of each side's most extreme records on each end its normal shift is fitted to.
BINORMAL_FIT_SHARE = 0.25
#: The share of the other side's records on each end the shift of :func:`fit_shift_roc` is
#: fitted to: each end's half, every record once. Where the whole ROC curve has slope 1 (the
#: check of :mod:`epsstar.statistics.fitting.roc_slope`), the body holds the same shift as
#: the tails, and the half fits it with the least variance (docs/accuracy.md, "The method
#: tails-shape-tested": at 10,000 a side the shift's spread falls by about a third from the
#: quarter of :data:`BINORMAL_FIT_SHARE`).
SHIFT_ROC_FIT_SHARE = 0.5
#: The gap to the cut of scores all at it (their estimate's largest value is about 1/gap).
_SMALLEST_GAP = 1e-6
#: Scales a truncated-normal fit keeps to: beyond them one tail sample decides too much.
_SCALE_RANGE = (0.05, 20.0)

#: A reference fit: the pooled sample's or the other side's.
Reference = TailedEmpirical | RelativeTailed
#: The end of a side a tail model describes.
End = Literal["lower", "upper"]
_END_NAMES: tuple[End, End] = ("lower", "upper")


def truncated_normal_shift(scores: ArrayLike, cut: float, scale: float = 1.0) -> float:
    """Maximum-likelihood mean ``m`` of N(m, scale²) truncated to ``(-inf, cut]``, from ``scores``.

    The truncated normal is an exponential family in ``m``: its likelihood is concave and
    its maximum solves ``mean(scores) = m - s φ((cut - m)/s) / Φ((cut - m)/s)``, the
    truncated mean, which increases from ``-inf`` to ``cut`` with ``m``. Scores all at
    ``cut`` have no finite estimate; their gap to ``cut`` is taken as :data:`_SMALLEST_GAP`.
    A cut at ``+inf`` truncates nothing: the estimate is the mean.
    """
    z = np.asarray(scores, dtype=np.float64) / scale
    z = z[np.isfinite(z)]
    if z.size == 0:
        return 0.0
    mean = float(np.mean(z))
    cut = cut / scale
    if not math.isfinite(cut):
        return mean * scale
    gap = max(cut - mean, _SMALLEST_GAP)

    def excess(m: float) -> float:
        return m - _mills(cut - m) - (cut - gap)

    # At m = cut + 2/gap + 10 the truncated mean is above cut - gap/2; at mean - 1 below mean.
    low, high = mean - 1.0, cut + 2.0 / gap + 10.0
    return scale * float(optimize.brentq(excess, low, high, xtol=1e-10))


def _mills(a: float) -> float:
    """``φ(a) / Φ(a)`` = sqrt(2/π) / erfcx(-a/√2), exact without underflow for any ``a``."""
    return math.sqrt(2.0 / math.pi) / float(special.erfcx(-a / math.sqrt(2.0)))


def truncated_normal_fit(scores: ArrayLike, cut: float) -> tuple[float, float]:
    """Maximum-likelihood ``(m, s)`` of N(m, s²) truncated to ``(-inf, cut]``, from ``scores``.

    At each scale the best shift is :func:`truncated_normal_shift`'s; the profile
    log-likelihood ``-n log s - Σ(z - m)²/(2s²) - n log Φ((cut - m)/s)`` is then maximised over
    ``log s`` in :data:`_SCALE_RANGE` by a bounded scalar search. A cut at ``+inf`` gives the
    sample's mean and standard deviation.
    """
    z = np.asarray(scores, dtype=np.float64)
    z = z[np.isfinite(z)]
    if z.size < 2 or not np.ptp(z) > 0:
        return truncated_normal_shift(z, cut), 1.0
    low, high = _SCALE_RANGE
    if not math.isfinite(cut):
        return float(np.mean(z)), min(max(float(np.std(z)), low), high)

    def negative_profile(log_s: float) -> float:
        s = math.exp(log_s)
        m = truncated_normal_shift(z, cut, s)
        residual = (z - m) / s
        return z.size * (log_s + float(special.log_ndtr((cut - m) / s))) + 0.5 * float(
            np.dot(residual, residual)
        )

    found = optimize.minimize_scalar(
        negative_profile,
        bounds=(math.log(low), math.log(high)),
        method="bounded",
        options={"xatol": 1e-7},
    )
    scale = math.exp(float(found.x))
    return truncated_normal_shift(z, cut, scale), scale


@dataclass(frozen=True, slots=True, eq=False)
class BinormalEnd(JsonRecord):
    """One end of one side: ``Φ((z - shift) / scale)`` on ``reference``'s normal scores
    ``z`` at that end, normalised at the side's threshold, whose score is ``at_threshold``."""

    reference: Reference
    shift: float
    scale: float
    at_threshold: float = field(metadata=json_rule(skip=True))

    @property
    def log_mass_at_threshold(self) -> float:
        return float(special.log_ndtr((self.at_threshold - self.shift) / self.scale))

    def log_share(self, log_level: FloatArray) -> FloatArray:
        """log of the side's share of its tail mass beyond a point at the reference's
        ``log_level`` (log CDF or log survival)."""
        with np.errstate(invalid="ignore"):
            z = special.ndtri_exp(np.minimum(log_level, 0.0))
        share = special.log_ndtr((z - self.shift) / self.scale) - self.log_mass_at_threshold
        result: FloatArray = share
        return result

    def reference_level(self, log_share: FloatArray) -> FloatArray:
        """The reference's level (CDF or survival) where the side's share of its tail mass is
        ``exp(log_share)``; the inverse of :meth:`log_share`."""
        target = np.minimum(log_share + self.log_mass_at_threshold, 0.0)
        z = self.shift + self.scale * special.ndtri_exp(target)
        result: FloatArray = np.exp(special.log_ndtr(z))
        return result


@dataclass(frozen=True, slots=True, eq=False)
class BinormalTailed(_BodyWithTails):
    """One side: its own interpolated empirical CDF, each tail a normal of a reference fit's
    normal scores (module doc)."""

    json_constants: ClassVar[Mapping[str, str]] = {"family": "binormal-tails"}

    knots: FloatArray = field(metadata=json_rule(skip=True))
    levels: FloatArray = field(metadata=json_rule(skip=True))
    n: int
    tail_mass: float
    lower: BinormalEnd = field(metadata=json_rule(name="lower_tail"))
    upper: BinormalEnd = field(metadata=json_rule(name="upper_tail"))

    @classmethod
    def fit(
        cls,
        values: SampleLike,
        reference: Reference,
        *,
        tail_size: int | None = None,
        tail_scale: float = 1.0,
        fit_share: float = BINORMAL_FIT_SHARE,
        scale_share: float | None = None,
    ) -> BinormalTailed:
        """Fit one side against ``reference`` at both ends. A summary of losses too many to
        hold keeps only its most extreme values, and a share beyond them is cut to them."""
        shares = _Shares.checked(fit_share, scale_share)
        ends = _split(values, tail_size, tail_scale)
        return cls._of_ends(
            ends,
            _fitted_end(values, ends, reference, "lower", shares),
            _fitted_end(values, ends, reference, "upper", shares),
        )

    @classmethod
    def _of_ends(cls, ends: _Ends, lower: BinormalEnd, upper: BinormalEnd) -> BinormalTailed:
        return cls(
            knots=ends.knots,
            levels=ends.levels,
            n=ends.n,
            tail_mass=ends.k / ends.n,
            lower=lower,
            upper=upper,
        )

    def _log_tails(self, x: FloatArray) -> tuple[FloatArray, FloatArray]:
        """log F(x) from the lower-tail model and log(1 - F(x)) from the upper one."""
        log_mass = math.log(self.tail_mass)
        low = log_mass + self.lower.log_share(self.lower.reference.logcdf(x))
        high = log_mass + self.upper.log_share(self.upper.reference.logsf(x))
        return low, high

    def _tail_quantiles(
        self, lower_q: FloatArray, upper_q: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        log_mass = math.log(self.tail_mass)
        with np.errstate(divide="ignore"):
            low_p = self.lower.reference_level(np.log(lower_q) - log_mass)
            high_p = self.upper.reference_level(np.log(upper_q) - log_mass)
        return self.lower.reference.ppf(low_p), self.upper.reference.isf(high_p)


@dataclass(frozen=True, slots=True)
class _Shares:
    """The shares of a side's records the shift and the scale are fitted to."""

    shift: float
    scale: float | None

    @classmethod
    def checked(cls, fit_share: float, scale_share: float | None) -> _Shares:
        shift = check_in_range("fit_share", fit_share, 0.0, 0.5, high_inclusive=True)
        if scale_share is None:
            return cls(shift, None)
        return cls(shift, check_in_range("scale_share", scale_share, 0.0, 1.0, high_inclusive=True))


def _fitted_end(
    values: SampleLike, ends: _Ends, reference: Reference, end: End, shares: _Shares
) -> BinormalEnd:
    """One end of one side fitted against ``reference``."""
    sample = as_sample(values)
    lower = end == "lower"
    log_level: Callable[[ArrayLike], FloatArray] = reference.logcdf if lower else reference.logsf

    def scores(share: float, most: int) -> tuple[FloatArray, float]:
        """The normal scores of the side's ``share`` most extreme records, outermost first,
        and the score of the next one (the truncation's cut)."""
        wide = min(max(ends.k, math.floor(share * ends.n)), most)
        extremes = sample.lowest(wide + 1) if lower else sample.highest(wide + 1)[::-1]
        found = special.ndtri_exp(np.minimum(log_level(extremes), 0.0))
        return found[:-1], float(found[-1])

    # A summary's sketch reads only its kept extremes: the share is cut to them.
    kept = sample.extremes_kept - 1
    z, cut = scores(shares.shift, min((ends.n - 2) // 2, kept))
    scale = 1.0
    if shares.scale is not None:
        _, scale = truncated_normal_fit(*scores(shares.scale, min(ends.n - 1, kept)))
    shift = truncated_normal_shift(z, cut, scale)
    threshold = ends.lowest[ends.k] if lower else ends.highest[0]
    at_threshold = float(special.ndtri_exp(min(float(log_level(np.array([threshold]))[0]), 0.0)))
    return BinormalEnd(reference, shift, scale, at_threshold)


def fit_binormal_tails(
    train: SampleLike,
    population: SampleLike,
    *,
    tail_size: int | None = None,
    tail_scale: float = 1.0,
    fit_share: float = BINORMAL_FIT_SHARE,
    scale_share: float | None = None,
) -> tuple[BinormalTailed, BinormalTailed]:
    """Both sides against one reference fitted to the pooled sample (see the module doc);
    ``tail_size`` and ``tail_scale`` as for
    :func:`~epsstar.statistics.fitting.tails.fit_relative_tails`."""
    reference = TailedEmpirical.fit(pooled(train, population), tail_scale=tail_scale)
    train_fit, population_fit = (
        BinormalTailed.fit(
            side,
            reference,
            tail_size=tail_size,
            tail_scale=tail_scale,
            fit_share=fit_share,
            scale_share=scale_share,
        )
        for side in (train, population)
    )
    return train_fit, population_fit


def fit_binormal_roc(
    train: SampleLike,
    population: SampleLike,
    *,
    tail_size: int | None = None,
    tail_scale: float = 1.0,
    fit_share: float = BINORMAL_FIT_SHARE,
    scale_share: float | None = BINORMAL_FIT_SHARE,
) -> tuple[BinormalTailed, BinormalTailed]:
    """A binormal ROC curve at each end, fitted directly (module doc): the side that reaches
    further at an end keeps its power tail there, the other side's tail is a normal of its
    normal scores; by default shift and scale are both fitted on ``fit_share``."""
    shares = _Shares.checked(fit_share, scale_share)
    sides = (train, population)
    power = fit_relative_tails(train, population, tail_size=tail_size, tail_scale=tail_scale)
    ends = [_split(side, tail_size, tail_scale) for side in sides]
    lower_reference, upper_reference = _reaching(ends[0], ends[1])
    fitted = []
    for index, side in enumerate(sides):
        found = []
        for end, reference in zip(_END_NAMES, (lower_reference, upper_reference), strict=True):
            if reference == index:
                found.append(_own_power_tail(power[index], end))
            else:
                found.append(_fitted_end(side, ends[index], power[reference], end, shares))
        fitted.append(BinormalTailed._of_ends(ends[index], *found))
    return fitted[0], fitted[1]


def reaching_sides(
    train: SampleLike,
    population: SampleLike,
    *,
    tail_size: int | None = None,
    tail_scale: float = 1.0,
) -> tuple[int, int]:
    """The side (0 training, 1 population) whose ``k``-th most extreme loss lies further out
    at the lower and at the upper end: :func:`fit_binormal_roc`'s reference there, whose
    power tail it keeps while it fits the other side's."""
    return _reaching(
        _split(train, tail_size, tail_scale), _split(population, tail_size, tail_scale)
    )


def _reaching(train: _Ends, population: _Ends) -> tuple[int, int]:
    lower = int(population.lowest[population.k] < train.lowest[train.k])
    upper = int(population.highest[0] > train.highest[0])
    return lower, upper


def fit_shift_roc(
    train: SampleLike,
    population: SampleLike,
    *,
    tail_size: int | None = None,
    tail_scale: float = 1.0,
) -> tuple[BinormalTailed, BinormalTailed]:
    """The equal-variance binormal ROC curve, the Gaussian mechanism's shape, fitted directly:
    :func:`fit_binormal_roc` with ``s = 1`` and the shift fitted on each end's half of the
    records (:data:`SHIFT_ROC_FIT_SHARE`). Beyond the data the curve is
    ``Φ⁻¹(FPR) = a + Φ⁻¹(TPR)`` whatever the reference side's tail, which only places it on
    the loss scale."""
    return fit_binormal_roc(
        train,
        population,
        tail_size=tail_size,
        tail_scale=tail_scale,
        fit_share=SHIFT_ROC_FIT_SHARE,
        scale_share=None,
    )


def _own_power_tail(own: RelativeTailed, end: End) -> BinormalEnd:
    """A side's power tail at ``end`` as a binormal end: its own fit's scores, unit normal
    (``Φ(z) / Φ(z_u)`` on ``z = Φ⁻¹(F(x))`` is ``F(x) / F(u)``)."""
    threshold = np.array([own.u_low if end == "lower" else own.u_high])
    level = own.logcdf(threshold) if end == "lower" else own.logsf(threshold)
    return BinormalEnd(own, 0.0, 1.0, float(special.ndtri_exp(min(float(level[0]), 0.0))))
