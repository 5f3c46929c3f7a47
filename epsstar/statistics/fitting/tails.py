"""Empirical body with generalised Pareto tails: a distribution for the far tails.

Epsilon* at δ ≪ 1/n is decided where the data run out: the supremum of eq. 7
(Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models") sits at an FPR or FNR
near δ, i.e. in the lower or upper tail of the loss distributions. :class:`TailedEmpirical` keeps
the data where they are dense and models only the tails, by peaks over threshold
(Pickands–Balkema–de Haan): beyond the ``k``-th most extreme loss on each side the excesses are
fitted by a generalised Pareto distribution (GPD) with shape ``xi`` and scale ``sigma``::

    F(x) = (k/n) * S_low(u_low - x)           for x < u_low  (lower tail)
    1 - F(x) = (k/n) * S_high(x - u_high)     for x > u_high (upper tail)

with ``S(y) = (1 + xi*y/sigma)^(-1/xi)`` the GPD survival function. Between
the two thresholds ``F`` interpolates the empirical CDF linearly. A power-law
tail near a finite endpoint (``F(x) ~ c*x^a``, e.g. losses near 0) is exactly
a GPD with ``xi = -1/a``; exponential tails give ``xi = 0``; heavy tails
``xi > 0``, so one model covers the usual loss shapes.

The GPD is fitted by the method of Zhang and Stephens (2009, Technometrics
51:316-325): a posterior-mean estimate over a fixed grid of the profile
likelihood, fast, vectorised and always defined (unlike maximum likelihood,
which can diverge for ``xi < -1/2``). ``k`` follows the rule
``k = min(0.2*n, 3*sqrt(n))`` of Pareto-smoothed importance sampling (Vehtari
et al., 2024, JMLR 25:1-58).

Fitting each side's tails on its own makes the two extrapolations disagree by
chance: with identical distributions, two independently estimated endpoints
or shapes give a large, spurious ratio at rates near δ. :class:`RelativeTailed`
(what :func:`fit_relative_tails` returns for both sides) removes most of that
noise: a :class:`TailedEmpirical` ``G`` is fitted once to the *pooled* sample,
and each side's tail beyond its own ``k``-th extreme is a power of ``G``'s
(a Lehmann alternative, ``F_side ∝ G^gamma`` in the tail)::

    F(x) = (k/n) * (G(x) / G(u_low))^gamma_low         for x < u_low
    1 - F(x) = (k/n) * (S(x) / S(u_high))^gamma_high   for x > u_high

``S = 1 - G``; ``gamma`` is the maximum-likelihood estimate ``k / sum(V)`` with
``V = log(G(u)/G(x))`` ~ Exponential(``gamma``) under the model. Power-law
tails, ``F_side ~ c x^a`` and ``G ~ c' x^b``, satisfy it exactly with
``gamma = a / b``. Both sides then share the pooled endpoint and tail shape,
and differ only by an exponent estimated from k records each.

Every object is loss-ordered and offers ``logcdf``/``logsf``/``ppf``/``isf``,
so :func:`epsstar.statistics.estimators.optimizer.parametric_supremum` takes them directly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from epsstar.exceptions import InsufficientDataError
from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.summaries.loss_sketch import SampleLike, as_sample, pooled
from epsstar.statistics.summaries.tail_size import default_tail_size

__all__ = [
    "GeneralizedPareto",
    "RelativeTailed",
    "TailedEmpirical",
    "fit_generalized_pareto",
    "fit_relative_tails",
]

#: Fewest records for a tailed fit: each tail needs a handful of excesses.
MIN_TAILED_RECORDS = 50
#: Shape estimates are kept in this range (beyond it one tail sample decides too much).
SHAPE_RANGE = (-1.0, 1.0)


@dataclass(frozen=True, slots=True)
class GeneralizedPareto(JsonRecord):
    """GPD of excesses ``y ≥ 0``: ``S(y) = (1 + xi y / sigma)^(-1/xi)`` (``exp(-y/sigma)`` at 0)."""

    xi: float
    sigma: float

    @property
    def endpoint(self) -> float:
        """Largest excess with positive probability (``inf`` unless ``xi < 0``)."""
        return -self.sigma / self.xi if self.xi < 0 else math.inf

    def logsf(self, y: ArrayLike) -> FloatArray:
        y = np.maximum(np.asarray(y, dtype=np.float64), 0.0)
        z = y / self.sigma
        if abs(self.xi) < 1e-12:
            return -z
        with np.errstate(divide="ignore", invalid="ignore"):
            value = -np.log1p(self.xi * z) / self.xi
        return np.where(self.xi * z > -1.0, value, -np.inf)

    def isf(self, p: ArrayLike) -> FloatArray:
        """Excess ``y`` with ``S(y) = p``, for ``p`` in ``(0, 1]``."""
        with np.errstate(divide="ignore"):
            log_p = np.log(np.asarray(p, dtype=np.float64))
        if abs(self.xi) < 1e-12:
            return -self.sigma * log_p
        result: FloatArray = self.sigma * np.expm1(-self.xi * log_p) / self.xi
        return result


def fit_generalized_pareto(excesses: ArrayLike) -> GeneralizedPareto:
    """Zhang–Stephens estimate of a GPD from excesses ``y ≥ 0`` (at least 5, not all 0)."""
    y = np.sort(np.asarray(excesses, dtype=np.float64))
    n = y.size
    if n < 5:
        raise InsufficientDataError(f"a tail fit needs at least 5 excesses. Found {n}.")
    if not y[-1] > 0:
        raise InsufficientDataError("a tail fit needs a positive excess. Found all 0.")
    m = 30 + int(math.sqrt(n))
    quartile = y[max(int(n / 4 + 0.5) - 1, 0)]
    if not quartile > 0:
        quartile = float(np.mean(y))
    j = np.arange(1, m + 1, dtype=np.float64)
    theta = 1.0 / y[-1] + (1.0 - np.sqrt(m / (j - 0.5))) / (3.0 * quartile)
    k = -np.mean(np.log1p(-np.outer(theta, y)), axis=1)
    # theta / k -> 1 / mean(y) as theta -> 0 (k ~ theta * mean(y)); a grid point can hit
    # theta = 0 exactly when the excesses are tied (quartile = largest excess).
    slope = np.divide(theta, k, out=np.full(m, 1.0 / float(np.mean(y))), where=k != 0)
    log_likelihood = n * (np.log(slope) + k - 1.0)
    weights = np.exp(log_likelihood - log_likelihood.max())
    weights /= weights.sum()
    theta_hat = float(np.dot(theta, weights))
    if abs(theta_hat) * y[-1] < 1e-10:
        return GeneralizedPareto(0.0, float(np.mean(y)))
    xi = float(np.mean(np.log1p(-theta_hat * y)))
    sigma = -xi / theta_hat
    low, high = SHAPE_RANGE
    if not low <= xi <= high:
        # Refit the scale by the mean excess of a GPD with the clipped shape.
        xi = min(max(xi, low), high)
        sigma = float(np.mean(y)) * (1.0 - xi) if xi < 1 else sigma
        if xi < 0:
            sigma = max(sigma, -xi * float(y[-1]))
    return GeneralizedPareto(xi, float(sigma))


@dataclass(frozen=True, slots=True)
class _Ends:
    """What a tailed fit reads of a sample of ``n`` values with tail size ``k``: its
    ``k + 1`` smallest and largest values (sorted) and the knots and levels of its body."""

    lowest: FloatArray
    highest: FloatArray
    k: int
    n: int
    knots: FloatArray
    levels: FloatArray


def _split(values: SampleLike, tail_size: int | None, tail_scale: float = 1.0) -> _Ends:
    """Tail size k, both ends and the knots and levels of the interpolated body.

    The body is the sample without its k smallest and k largest values; its
    empirical CDF runs linearly from k/n to 1 - k/n, keeping one knot per
    distinct value (the last level reached at it) when values tie. A sketch
    (:class:`~epsstar.statistics.summaries.loss_sketch.LossSketch`) that does not hold every
    value gives its body at the grid's edges instead (``LossSketch.body``).
    """
    sample = as_sample(values)
    n = sample.n
    if n < MIN_TAILED_RECORDS:
        raise InsufficientDataError(
            f"a tailed fit needs at least {MIN_TAILED_RECORDS} values. Found {n}."
        )
    k = default_tail_size(n, tail_scale) if tail_size is None else int(tail_size)
    if not 5 <= k <= (n - 2) // 2:
        raise InsufficientDataError(
            f"tail_size must be in [5, {(n - 2) // 2}] for {n} values. Found {k}."
        )
    lowest, highest = sample.lowest(k + 1), sample.highest(k + 1)
    if not highest[0] > lowest[-1]:
        raise InsufficientDataError(
            "the central part of the sample is a single value; no CDF can be fitted to it. "
            f"Found {lowest[-1]}."
        )
    knots, levels = sample.body(k)
    return _Ends(lowest, highest, k, n, knots, levels)


class _BodyWithTails(JsonRecord):
    """An interpolated empirical body between a lower- and an upper-tail model.

    Subclasses give the tails: ``_log_tails(x)`` returns log F(x) of the lower-tail
    model and log(1 - F(x)) of the upper-tail model, ``_tail_quantiles`` their
    inverses; CDF, survival function and quantiles on both scales follow here. Their
    JSON writes the body's ends (the tails' thresholds) after ``tail_mass``, not its knots.
    """

    __slots__ = ()
    knots: FloatArray
    levels: FloatArray
    tail_mass: float

    @json_property(name="lower_threshold", after="tail_mass")
    def u_low(self) -> float:
        return float(self.knots[0])

    @json_property(name="upper_threshold", after="tail_mass")
    def u_high(self) -> float:
        return float(self.knots[-1])

    def _log_tails(self, x: FloatArray) -> tuple[FloatArray, FloatArray]:
        raise NotImplementedError

    def _tail_quantiles(
        self, lower_q: FloatArray, upper_q: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        raise NotImplementedError

    def logcdf(self, x: ArrayLike) -> FloatArray:
        x = np.asarray(x, dtype=np.float64)
        low, high = self._log_tails(x)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            body = np.log(np.interp(x, self.knots, self.levels))
            upper = np.log1p(-np.minimum(np.exp(high), 1.0))
        return np.where(x < self.u_low, low, np.where(x > self.u_high, upper, body))

    def logsf(self, x: ArrayLike) -> FloatArray:
        x = np.asarray(x, dtype=np.float64)
        low, high = self._log_tails(x)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            body = np.log1p(-np.interp(x, self.knots, self.levels))
            lower = np.log1p(-np.minimum(np.exp(low), 1.0))
        return np.where(x < self.u_low, lower, np.where(x > self.u_high, high, body))

    def cdf(self, x: ArrayLike) -> FloatArray:
        return np.exp(self.logcdf(x))

    def sf(self, x: ArrayLike) -> FloatArray:
        return np.exp(self.logsf(x))

    def _quantile(self, lower_q: FloatArray, upper_q: FloatArray) -> FloatArray:
        """Quantile given both ``q`` and ``1 - q`` (each exact where it is small)."""
        mass = self.tail_mass
        low, high = self._tail_quantiles(lower_q, upper_q)
        body = np.interp(lower_q, self.levels, self.knots)
        result: FloatArray = np.where(lower_q < mass, low, np.where(upper_q < mass, high, body))
        return result

    def ppf(self, q: ArrayLike) -> FloatArray:
        q = np.asarray(q, dtype=np.float64)
        return self._quantile(q, 1.0 - q)

    def isf(self, q: ArrayLike) -> FloatArray:
        q = np.asarray(q, dtype=np.float64)
        return self._quantile(1.0 - q, q)


@dataclass(frozen=True, slots=True, eq=False)
class TailedEmpirical(_BodyWithTails):
    """Linear-interpolated empirical CDF between GPD-modelled lower and upper tails."""

    json_constants: ClassVar[Mapping[str, str]] = {"family": "gpd-tails"}

    knots: FloatArray = field(metadata=json_rule(skip=True))
    levels: FloatArray = field(metadata=json_rule(skip=True))
    n: int
    tail_mass: float
    lower: GeneralizedPareto = field(metadata=json_rule(name="lower_tail"))
    upper: GeneralizedPareto = field(metadata=json_rule(name="upper_tail"))

    @classmethod
    def fit(
        cls, values: SampleLike, *, tail_size: int | None = None, tail_scale: float = 1.0
    ) -> TailedEmpirical:
        """Fit to a sample; ``tail_size`` (``k``) defaults to :func:`default_tail_size`
        at ``tail_scale``."""
        ends = _split(values, tail_size, tail_scale)
        low, high, k = ends.lowest, ends.highest, ends.k
        spread = float(high[-1] - low[0]) or 1.0
        lower = _tail_fit(low[k] - low[:k], spread)
        upper = _tail_fit(high[1:] - high[0], spread)
        return cls(
            knots=ends.knots,
            levels=ends.levels,
            n=ends.n,
            tail_mass=k / ends.n,
            lower=lower,
            upper=upper,
        )

    def _log_tails(self, x: FloatArray) -> tuple[FloatArray, FloatArray]:
        log_mass = math.log(self.tail_mass)
        with np.errstate(divide="ignore", invalid="ignore"):
            low = log_mass + self.lower.logsf(self.u_low - x)
            high = log_mass + self.upper.logsf(x - self.u_high)
        return low, high

    def _tail_quantiles(
        self, lower_q: FloatArray, upper_q: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        mass = self.tail_mass
        with np.errstate(divide="ignore", invalid="ignore"):
            low = self.u_low - self.lower.isf(np.clip(lower_q / mass, 0.0, 1.0))
            high = self.u_high + self.upper.isf(np.clip(upper_q / mass, 0.0, 1.0))
        return low, high


def _tail_fit(excesses: FloatArray, spread: float) -> GeneralizedPareto:
    """GPD of one tail's excesses; an all-tied tail becomes a negligibly thin one (scale
    1e-9 of the sample's ``spread``)."""
    if excesses.max() > 0:
        return fit_generalized_pareto(excesses)
    return GeneralizedPareto(0.0, 1e-9 * spread)


@dataclass(frozen=True, slots=True, eq=False)
class RelativeTailed(_BodyWithTails):
    """One side: its own interpolated empirical CDF, tails as powers of a pooled fit."""

    json_constants: ClassVar[Mapping[str, str]] = {"family": "relative-tails"}

    knots: FloatArray = field(metadata=json_rule(skip=True))
    levels: FloatArray = field(metadata=json_rule(skip=True))
    n: int
    tail_mass: float
    gamma_low: float = field(metadata=json_rule(name="lower_exponent"))
    gamma_high: float = field(metadata=json_rule(name="upper_exponent"))
    reference: TailedEmpirical
    #: ``log G(u_low)`` and ``log S(u_high)`` of the reference, fixed at the fit.
    reference_at_low: float = field(metadata=json_rule(skip=True))
    reference_at_high: float = field(metadata=json_rule(skip=True))

    @classmethod
    def fit(
        cls,
        values: SampleLike,
        reference: TailedEmpirical,
        *,
        tail_size: int | None = None,
        tail_scale: float = 1.0,
    ) -> RelativeTailed:
        """Fit one side against ``reference`` (a fit to the pooled sample)."""
        ends = _split(values, tail_size, tail_scale)
        k = ends.k
        u_low, u_high = ends.lowest[k], ends.highest[0]
        at_low = float(reference.logcdf(np.array([u_low]))[0])
        at_high = float(reference.logsf(np.array([u_high]))[0])
        excess_low = at_low - reference.logcdf(ends.lowest[:k])
        excess_high = at_high - reference.logsf(ends.highest[1:])
        return cls(
            knots=ends.knots,
            levels=ends.levels,
            n=ends.n,
            tail_mass=k / ends.n,
            gamma_low=_exponent(excess_low),
            gamma_high=_exponent(excess_high),
            reference=reference,
            reference_at_low=at_low,
            reference_at_high=at_high,
        )

    def _log_tails(self, x: FloatArray) -> tuple[FloatArray, FloatArray]:
        """log F(x) from the lower-tail model and log(1 - F(x)) from the upper one."""
        ref = self.reference
        log_mass = math.log(self.tail_mass)
        at_low, at_high = self.reference_at_low, self.reference_at_high
        with np.errstate(invalid="ignore", over="ignore"):
            low = log_mass + self.gamma_low * (ref.logcdf(x) - at_low)
            high = log_mass + self.gamma_high * (ref.logsf(x) - at_high)
        return low, high

    def _tail_quantiles(
        self, lower_q: FloatArray, upper_q: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        ref = self.reference
        log_mass = math.log(self.tail_mass)
        at_low, at_high = self.reference_at_low, self.reference_at_high
        with np.errstate(divide="ignore", invalid="ignore"):
            # G(x) = G(u) (q / mass)^(1/gamma), solved on the reference's log scale.
            p_low = np.exp(at_low + (np.log(lower_q) - log_mass) / self.gamma_low)
            p_high = np.exp(at_high + (np.log(upper_q) - log_mass) / self.gamma_high)
            low = ref.ppf(np.minimum(p_low, 1.0))
            high = ref.isf(np.minimum(p_high, 1.0))
        return low, high


def fit_relative_tails(
    train: SampleLike,
    population: SampleLike,
    *,
    tail_size: int | None = None,
    tail_scale: float = 1.0,
) -> tuple[RelativeTailed, RelativeTailed]:
    """Both sides against one reference fitted to the pooled sample (see the module doc).

    ``tail_size`` fixes ``k`` of both sides; without it every fit (the pooled reference
    and each side) takes :func:`default_tail_size` of its own size at ``tail_scale``.
    """
    reference = TailedEmpirical.fit(pooled(train, population), tail_scale=tail_scale)
    return (
        RelativeTailed.fit(train, reference, tail_size=tail_size, tail_scale=tail_scale),
        RelativeTailed.fit(population, reference, tail_size=tail_size, tail_scale=tail_scale),
    )


def _exponent(log_excess: FloatArray) -> float:
    """Maximum-likelihood rate of Exponential excesses; finite even if all are 0."""
    total = float(np.sum(log_excess[np.isfinite(log_excess)]))
    return log_excess.size / max(total, 1e-12 * log_excess.size)
