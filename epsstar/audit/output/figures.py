"""Every number the report of one audit draws, computed once: :class:`AuditFigures`.

:func:`audit_figures` turns an :class:`~epsstar.audit.output.result.AuditResult` (and
its per-record losses) into one frozen record that ``epsstar.reports`` renders
without computing anything:

* histograms of the losses and of the transformed losses φ in
  :data:`HISTOGRAM_BINS` shared bins over the central ``1 - 2 HISTOGRAM_TRIM`` of
  the pooled values, with the counts per side and the values left out, and the
  losses that sit at the value a clipped probability gives (:class:`ClippedLosses`);
* the densities of the distributions fitted to φ (§3.1 of
  Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models");
* the FNR/FPR trade-off of the loss-threshold test (eqs. 5-6): observed, at a
  bounded set of thresholds, and fitted; the (ε*, δ) boundary
  ``f(x) = max(0, 1 - δ - e^ε x, e^-ε (1 - δ - x))`` with its corner, the
  no-leak line ``f(x) = 1 - x``, the μ-GDP curve ``f(x) = Φ(-Φ^-1(x) - μ)``
  through the Epsilon* point (Dong, Roth & Su 2022, "Gaussian Differential Privacy"), and the
  ranges of both axes;
* every attack's observed ROC curve (TPR against FPR of "member if score ≤ τ") on
  log-log axes, at a bounded set of corners (:func:`roc_points`), with the readings'
  TPR at 0.1 % and 1 % FPR, the diagonal TPR = FPR and the (ε*, δ) bound of the
  strongest attack, ``TPR ≤ e^ε FPR + δ``
  (:class:`AttackCurvesFigure`, when the audit ran more than the loss attack);
* Appendix 8.2's grid of hold-out KS p-values of Gaussian mixtures, on a seeded
  subsample of at most :data:`KS_GRID_MAX_VALUES` transformed losses per side;
* how the headline Epsilon* was estimated, in words from the names table
  (:mod:`epsstar.statistics.names`).

The size of the record does not grow with the number of records: histograms
have a fixed number of bins and curves at most a few hundred points.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import NDArray
from scipy import stats
from scipy.special import ndtr, ndtri

from epsstar.exceptions import EpsstarError
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.estimators.curves import parametric_curve
from epsstar.statistics.fitting import GaussianMixtureFit, LossDistribution, NormalFit
from epsstar.statistics.fitting.goodness_of_fit import GoodnessOfFit, ks_table
from epsstar.statistics.losses import MAX_ABS_LOGIT, PROBABILITY_CLIP
from epsstar.statistics.names import ATTACKS, FAMILIES, METHODS, TESTED_LEVEL
from epsstar.statistics.readings.conversions import gdp_mu_from_rates
from epsstar.statistics.readings.noise import ReadingNoise, reading_noise
from epsstar.statistics.readings.readings import READING_FPRS

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.output.attack_result import AttackResult
    from epsstar.audit.output.result import AuditResult
    from epsstar.statistics.fitting.base import FittedDistribution
    from epsstar.statistics.results import EpsilonStarResult

__all__ = [
    "CURVE_POINTS",
    "HISTOGRAM_BINS",
    "HISTOGRAM_TRIM",
    "KS_GRID_COMPONENTS",
    "KS_GRID_MAX_VALUES",
    "KS_GRID_SAMPLE_SIZES",
    "ROC_LEVELS",
    "ROC_LOW_COUNTS",
    "TAIL_QUANTILE",
    "AttackCurve",
    "AttackCurvesFigure",
    "AuditFigures",
    "ClippedLosses",
    "Curve",
    "FittedDensities",
    "Histogram",
    "HistogramFigure",
    "KSGrid",
    "KSGridRow",
    "KSGridSide",
    "RatePoint",
    "ReadingNoise",
    "SideHistogram",
    "TprMark",
    "TradeoffFigure",
    "attack_curves",
    "audit_figures",
    "clip_values",
    "clipped_losses",
    "dp_boundary_corner",
    "estimator_description",
    "fitted_density",
    "histogram",
    "ks_grid",
    "observed_tradeoff",
    "roc_points",
    "tradeoff_figure",
]

#: Bins of every histogram.
HISTOGRAM_BINS = 60
#: Share of the pooled values cut from each end of a histogram's axis.
HISTOGRAM_TRIM = 0.001
#: Share of the pooled values beyond each of the quantiles a histogram's caption names.
TAIL_QUANTILE = 0.01
#: Mixture components and sample sizes of the goodness-of-fit grid (Appendix 8.2).
KS_GRID_COMPONENTS: tuple[int, ...] = tuple(range(1, 11))
KS_GRID_SAMPLE_SIZES: tuple[int, ...] = (100, 400, 700, 1000)
#: The grid is computed on at most this many transformed losses per side (seeded subsample).
KS_GRID_MAX_VALUES = 2000
#: Points per curve tail on the trade-off chart.
CURVE_POINTS = 120
#: ROC curves keep every corner up to this many flagged non-members (the exact low end) ...
ROC_LOW_COUNTS = 40
#: ... and the corners around this many FPRs evenly spaced in log FPR from 1/n to 1.
ROC_LEVELS = 120
#: Points of each fitted density curve.
DENSITY_POINTS = 240
#: Points per tail of the (ε*, δ) boundary and the μ-GDP curve.
BOUNDARY_POINTS = 200

IntArray = NDArray[np.int64]


# --- records -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SideHistogram:
    """One side's values in the shared bins: counts, drawn heights, values left out."""

    counts: IntArray
    #: Per bin: the percentage of the side's values, or the density (``counts / (n · width)``).
    heights: FloatArray
    #: Values beyond the axis (the trimmed tails), not drawn.
    outside: int


@dataclass(frozen=True, slots=True)
class Histogram:
    """Training and population values in shared bins (``edges`` has one more entry)."""

    edges: FloatArray
    train: SideHistogram
    population: SideHistogram
    density: bool
    #: Share of the pooled values the axis covers, ``1 - 2 * HISTOGRAM_TRIM``.
    central_share: float

    @property
    def bins(self) -> int:
        return int(self.edges.size - 1)


@dataclass(frozen=True, slots=True)
class FittedDensities:
    """Densities of the distributions fitted to φ on a common grid ``x``."""

    family: str
    x: FloatArray
    train: FloatArray
    population: FloatArray


@dataclass(frozen=True, slots=True)
class ClippedLosses:
    """Losses equal to one end of the range that clipped probabilities allow.

    Probabilities are clipped to ``[2^-52, 1 - 2^-52]`` before logarithms
    (:mod:`epsstar.statistics.losses`), so a model that gives the true class a
    probability of 1 (or 0) to float64 precision puts all such records at one
    loss, ``value``: a spike in the histogram, far from the other losses.
    """

    #: ``"lowest"`` (the true class had probability 1) or ``"highest"`` (it had 0).
    end: Literal["lowest", "highest"]
    value: float
    train: int
    population: int
    #: The pooled loss nearest to ``value`` that is not at it; None when every loss is.
    nearest: float | None
    #: Height of the taller bar of the bin that holds ``value``; None when ``value`` is off the
    #: histogram's axis (then these losses are among the values left out).
    bar_top: float | None


@dataclass(frozen=True, slots=True)
class HistogramFigure:
    """A histogram chart: the bars, optional fitted densities, and both axis ranges."""

    histogram: Histogram
    x_range: tuple[float, float]
    y_range: tuple[float, float]
    fitted: FittedDensities | None = None
    #: Losses at the values clipped probabilities give, lowest end first (only ends with some).
    clipped: tuple[ClippedLosses, ...] = ()
    #: The TAIL_QUANTILE and 1 - TAIL_QUANTILE quantiles of the pooled values not in
    #: ``clipped`` (how far the bulk reaches); None when there are none.
    tails: tuple[float, float] | None = None


@dataclass(frozen=True, slots=True)
class Curve:
    """A polyline in data coordinates (for trade-off curves: x = FPR, y = FNR)."""

    x: FloatArray
    y: FloatArray


@dataclass(frozen=True, slots=True)
class RatePoint:
    """The test that attains an Epsilon*: its FPR, FNR and ε."""

    fpr: float
    fnr: float
    epsilon: float


@dataclass(frozen=True, slots=True)
class TradeoffFigure:
    """FNR against FPR on log-odds axes, with the curves and points drawn on it."""

    #: Range of both axes.
    axis: tuple[float, float]
    #: Rates below one record's worth of data: 1/n_population (FPR) and 1/n_train (FNR).
    smallest_supported_fpr: float
    smallest_supported_fnr: float
    boundary: Curve
    #: Where the boundary's two lines cross: FPR = FNR = (1 - δ) / (1 + e^ε); ``epsilon`` is ε.
    boundary_corner: RatePoint
    #: The trade-off of a test that learns nothing, FNR = 1 - FPR, from end to end of the
    #: boundary's FPRs: two points, as it is a straight line on log-odds axes.
    no_leak: Curve
    empirical: Curve
    fitted: Curve | None
    #: μ of the μ-GDP curve through the Epsilon* point, when it is finite and positive.
    gdp_mu: float | None
    gdp: Curve | None
    star: RatePoint | None
    empirical_star: RatePoint | None


@dataclass(frozen=True, slots=True)
class KSGridRow:
    """Hold-out KS p-values of one mixture size, one per sample size."""

    n_components: int
    pvalues: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class KSGridSide:
    """One side's grid, or the error that prevented it."""

    used: int
    sample_sizes: tuple[int, ...] = ()
    rows: tuple[KSGridRow, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class KSGrid:
    """Appendix 8.2's grid for both sides."""

    components: tuple[int, ...]
    max_values: int
    train: KSGridSide
    population: KSGridSide


@dataclass(frozen=True, slots=True)
class TprMark:
    """A reading of the attacks table, the observed TPR at ``fpr``, and where it is drawn.

    ``x = max(fpr, 1/n_nonmembers)`` and ``y = max(tpr, 1/n_members)``: below one
    non-member the reading is the test that flags none (FPR 0), drawn, like the
    curve's counts of 0, at one record's worth.
    """

    fpr: float
    tpr: float
    x: float
    y: float


@dataclass(frozen=True, slots=True)
class AttackCurve:
    """One attack's observed ROC curve: TPR against FPR of "member if score ≤ τ".

    ``fpr`` and ``tpr`` trace the step function "the largest observed TPR of a test
    with FPR ≤ x" through the corners of :func:`roc_points`: counts over
    ``n_nonmembers`` and ``n_members``, a count of 0 drawn as 1. The readings' TPR
    at an FPR (``marks``) lies on it.
    """

    name: str
    fpr: FloatArray
    tpr: FloatArray
    strongest: bool
    epsilon: float
    auc: float
    n_members: int
    n_nonmembers: int
    marks: tuple[TprMark, ...]


@dataclass(frozen=True, slots=True)
class AttackCurvesFigure:
    """Every attack's ROC curve on log-log axes, with the diagonal and the strongest's bound."""

    #: Range of both axes: (a power of ten at or below 1 / the largest set, 1).
    axis: tuple[float, float]
    curves: tuple[AttackCurve, ...]
    #: The largest numbers of non-members and members any attack scored, and one record's
    #: worth of them: rates below those were observed by no attack.
    most_nonmembers: int
    most_members: int
    smallest_fpr: float
    smallest_tpr: float
    #: The strongest attack's (ε*, δ) bound ``TPR ≤ e^ε FPR + δ`` up to where it reaches 1;
    #: None when it is 1 on the whole axis (or ε* is not finite).
    bound: Curve | None
    bound_epsilon: float
    bound_delta: float

    @property
    def strongest(self) -> AttackCurve:
        return next(curve for curve in self.curves if curve.strongest)


@dataclass(frozen=True, slots=True)
class FitRow:
    """One side's fitted distribution as the report's table lists it: the family, its
    parameters by name (in φ units) and the goodness of fit."""

    side: str
    family: str
    parameters: tuple[tuple[str, object], ...]
    goodness: GoodnessOfFit


def fit_rows(result: AuditResult) -> tuple[FitRow, ...]:
    """The rows of the goodness-of-fit table, one per fitted side (none without fits)."""
    rows = []
    for side, report in result.epsilon.fits.items():
        stated = report.fit.to_dict()
        parameters = tuple((key, value) for key, value in stated.items() if key != "family")
        rows.append(FitRow(side, str(stated["family"]), parameters, report.goodness_of_fit))
    return tuple(rows)


@dataclass(frozen=True, slots=True)
class AuditFigures:
    """Everything the report of one audit draws besides the result's own fields."""

    losses: HistogramFigure
    #: Transformed losses with the fitted densities; None when the method fits no transform.
    transformed: HistogramFigure | None
    tradeoff: TradeoffFigure
    #: None when the method has no transform or the grid was left out.
    ks_grid: KSGrid | None
    #: How the headline Epsilon* was estimated, in words (see :func:`estimator_description`).
    estimator: str
    #: The attacks' ROC curves; None when only the loss attack ran.
    attacks: AttackCurvesFigure | None = None
    #: The goodness-of-fit table's rows (none when the method fits no distribution).
    fits: tuple[FitRow, ...] = ()
    #: Which observed readings exceed what (ε*, δ) allows, and whether only by sampling noise.
    noise: ReadingNoise | None = None
    #: Each attack's scores as histograms (text audits; none for tables).
    attack_histograms: tuple[AttackHistogram, ...] = ()


@dataclass(frozen=True, slots=True)
class AttackHistogram:
    """One attack's scores on the members (training records) and the non-members
    (population records), each side as a percentage of its records in shared bins."""

    name: str
    #: What the attack's score is (its summary in :data:`epsstar.statistics.names.ATTACKS`).
    summary: str
    figure: HistogramFigure


# --- histograms ----------------------------------------------------------------------------------


def histogram(train: FloatArray, population: FloatArray, *, density: bool) -> Histogram:
    """Shared bin edges over the central pooled values; counts and heights per side."""
    pooled = np.concatenate([train, population])
    low, high = np.quantile(pooled, [HISTOGRAM_TRIM, 1.0 - HISTOGRAM_TRIM])
    if not high > low:
        low, high = float(np.min(pooled)), float(np.max(pooled))
    if not high > low:
        low, high = low - 0.5, high + 0.5
    edges = np.linspace(low, high, HISTOGRAM_BINS + 1)

    def side(values: FloatArray) -> SideHistogram:
        counts, _ = np.histogram(values, bins=edges)
        scale = values.size * (np.diff(edges) if density else 1.0)
        heights = counts / scale * (1.0 if density else 100.0)
        return SideHistogram(counts, heights, int(values.size - counts.sum()))

    return Histogram(
        edges=edges,
        train=side(train),
        population=side(population),
        density=density,
        central_share=1.0 - 2.0 * HISTOGRAM_TRIM,
    )


def _tallest(histogram: Histogram) -> float:
    return float(max(histogram.train.heights.max(), histogram.population.heights.max()))


def _span(histogram: Histogram) -> tuple[float, float]:
    return float(histogram.edges[0]), float(histogram.edges[-1])


def clip_values(loss: object, output_kind: object) -> tuple[float, float] | None:
    """The lowest and highest loss that clipped probabilities give; None for logits.

    Logit loss: ``±log((1 - ε) / ε)``; cross-entropy: ``-log(1 - ε)`` and ``-log ε``,
    with ``ε = 2^-52`` (``epsstar.statistics.losses``). Losses from logits are not
    clipped; unknown losses or outputs (losses read from files) give None.
    """
    if output_kind != "probabilities":
        return None
    if loss == "logit":
        return -MAX_ABS_LOGIT, MAX_ABS_LOGIT
    if loss == "cross_entropy":
        return -math.log1p(-PROBABILITY_CLIP), -math.log(PROBABILITY_CLIP)
    return None


def _at(values: FloatArray, value: float) -> NDArray[np.bool_]:
    """Which values equal ``value`` to a relative 1e-9 (the same clip, computed another way)."""
    return np.asarray(np.abs(values - value) <= 1e-9 * abs(value))


def clipped_losses(
    train: FloatArray, population: FloatArray, ends: tuple[float, float], bars: Histogram
) -> tuple[ClippedLosses, ...]:
    """Counts of the losses at the lowest and highest of ``ends`` (relative tolerance 1e-9).

    Only ends that some loss sits at are returned, lowest first.
    """
    pooled = np.concatenate([train, population])
    names: tuple[Literal["lowest", "highest"], ...] = ("lowest", "highest")
    found = []
    for end, value in zip(names, ends, strict=True):
        at_train, at_population = _at(train, value), _at(population, value)
        if not (at_train.any() or at_population.any()):
            continue
        others = pooled[~_at(pooled, value)]
        nearest = float(others[np.argmin(np.abs(others - value))]) if others.size else None
        bar_top = None
        if bars.edges[0] <= value <= bars.edges[-1]:
            index = min(int(np.searchsorted(bars.edges, value, side="right")) - 1, bars.bins - 1)
            bar_top = float(max(bars.train.heights[index], bars.population.heights[index]))
        found.append(
            ClippedLosses(
                end=end,
                value=float(value),
                train=int(at_train.sum()),
                population=int(at_population.sum()),
                nearest=nearest,
                bar_top=bar_top,
            )
        )
    return tuple(found)


def _tails(values: FloatArray) -> tuple[float, float] | None:
    if not values.size:
        return None
    low, high = np.quantile(values, [TAIL_QUANTILE, 1.0 - TAIL_QUANTILE])
    return float(low), float(high)


def loss_figure(result: AuditResult) -> HistogramFigure:
    """Histograms of the losses, each side as a percentage of its records.

    Losses at the values clipped probabilities give are counted per end
    (:func:`clip_values` of the provenance's ``loss`` and ``output_kind``).
    """
    train, population = result.train_losses, result.population_losses
    bars = histogram(train, population, density=False)
    provenance = result.provenance
    ends = None if provenance is None else clip_values(provenance.loss, provenance.output_kind)
    clipped = () if ends is None else clipped_losses(train, population, ends, bars)
    pooled = np.concatenate([train, population])
    for mass in clipped:
        pooled = pooled[~_at(pooled, mass.value)]
    return HistogramFigure(
        bars,
        _span(bars),
        (0.0, _tallest(bars) * 1.1 or 1.0),
        clipped=clipped,
        tails=_tails(pooled),
    )


def attack_histograms(result: AuditResult) -> tuple[AttackHistogram, ...]:
    """One histogram figure per attack of ``result`` with scores on both sides (finite
    scores only, in :func:`histogram`'s bins over the central pooled values)."""
    found = []
    for attack in result.attacks:
        members = attack.member_scores[np.isfinite(attack.member_scores)]
        nonmembers = attack.nonmember_scores[np.isfinite(attack.nonmember_scores)]
        if not (members.size and nonmembers.size):
            continue
        bars = histogram(members, nonmembers, density=False)
        figure = HistogramFigure(bars, _span(bars), (0.0, _tallest(bars) * 1.1 or 1.0))
        found.append(AttackHistogram(attack.name, ATTACKS[attack.name].summary, figure))
    return tuple(found)


def fitted_density(fit: FittedDistribution, x: FloatArray) -> FloatArray:
    """Density of a fit: from its parameters, else by differentiating its CDF."""
    if isinstance(fit, GaussianMixtureFit):
        total = np.zeros_like(x)
        for w, m, s in zip(fit.weights, fit.means, fit.sds, strict=True):
            total += w * stats.norm.pdf(x, m, s)
        return total
    if isinstance(fit, NormalFit):
        return np.asarray(stats.norm.pdf(x, fit.mean, fit.sd), dtype=np.float64)
    return np.gradient(np.asarray(fit.cdf(x), dtype=np.float64), x)


def transformed_figure(result: AuditResult) -> HistogramFigure | None:
    """Density histograms of φ with the fitted densities; None without a transform or fits."""
    eps = result.epsilon
    if eps.transform is None or not eps.fits:
        return None
    bars = histogram(
        eps.transform.forward(result.train_losses),
        eps.transform.forward(result.population_losses),
        density=True,
    )
    x = np.linspace(bars.edges[0], bars.edges[-1], DENSITY_POINTS)
    fitted = FittedDensities(
        family=eps.family or "fit",
        x=x,
        train=fitted_density(eps.fits["train"].fit, x),
        population=fitted_density(eps.fits["population"].fit, x),
    )
    top = max(_tallest(bars), float(fitted.train.max()), float(fitted.population.max()))
    return HistogramFigure(bars, _span(bars), (0.0, top * 1.1 or 1.0), fitted)


# --- trade-off -----------------------------------------------------------------------------------


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _axis_low(values: Iterable[float]) -> float:
    """A power of ten at least one decade below the smallest positive value, in [1e-12, 1e-2]."""
    positive = [v for v in values if _finite(v) and v > 0]
    low = min(positive) if positive else 1e-6
    return float(min(1e-2, max(1e-12, 10.0 ** (math.floor(math.log10(low)) - 1))))


def observed_tradeoff(train: FloatArray, population: FloatArray, low: float) -> Curve:
    """(FPR, FNR) of the loss-threshold test at a bounded set of observed thresholds.

    Small data: every distinct loss. Large data: the losses at geometrically
    spaced ranks towards both tails of both sides, down to rate ``low``, so the
    log-log curve keeps its shape with a fixed number of points.
    """
    sorted_train, sorted_pop = np.sort(train), np.sort(population)
    pooled = np.unique(np.concatenate([sorted_train, sorted_pop]))
    if pooled.size <= 4 * CURVE_POINTS:
        thresholds = pooled
    else:
        levels = np.geomspace(max(low, 1.0 / max(train.size, population.size)), 0.5, CURVE_POINTS)
        levels = np.concatenate([levels, 1.0 - levels])
        thresholds = np.unique(
            np.concatenate(
                [
                    np.quantile(sorted_pop, levels, method="inverted_cdf"),
                    np.quantile(sorted_train, levels, method="inverted_cdf"),
                ]
            )
        )
    fpr = np.searchsorted(sorted_pop, thresholds, side="right") / sorted_pop.size
    fnr = 1.0 - np.searchsorted(sorted_train, thresholds, side="right") / sorted_train.size
    return Curve(fpr, fnr)


def _rate_point(estimate: EpsilonStarResult) -> RatePoint | None:
    if not (_finite(estimate.fpr) and _finite(estimate.fnr)):
        return None
    return RatePoint(float(estimate.fpr), float(estimate.fnr), float(estimate.epsilon))


def _gdp_mu(estimate: EpsilonStarResult) -> float | None:
    if not (_finite(estimate.fpr) and _finite(estimate.fnr)):
        return None
    mu = gdp_mu_from_rates(estimate.fpr, estimate.fnr)
    return mu if math.isfinite(mu) and mu > 0 else None


def _fitted_tradeoff(estimate: EpsilonStarResult, low: float) -> Curve | None:
    if estimate.transform is None or not estimate.fits:
        return None
    curve = parametric_curve(
        LossDistribution(estimate.fits["train"].fit, estimate.transform),
        LossDistribution(estimate.fits["population"].fit, estimate.transform),
        points_per_tail=CURVE_POINTS,
        smallest_rate=max(low / 10.0, 1e-300),
    )
    return Curve(curve.fpr, curve.fnr)


def dp_boundary_corner(epsilon: float, delta: float) -> RatePoint:
    """Where ``1 - δ - e^ε x`` and ``e^-ε (1 - δ - x)`` cross: ``x = f(x) = (1 - δ) / (1 + e^ε)``.

    The boundary is the trade-off function ``f_{ε,δ}`` of Prop. 2.5 in Dong, Roth & Su,
    the larger of these two lines: left of this
    point the first, right of it the second, so the boundary has a corner here.
    """
    rate = float((1.0 - delta) / (1.0 + math.exp(min(epsilon, 700.0))))
    return RatePoint(rate, rate, float(epsilon))


def tradeoff_figure(result: AuditResult) -> TradeoffFigure:
    """The trade-off chart's axes, curves and points (see the module docstring)."""
    eps = result.epsilon
    n_train, n_pop = eps.n_train, eps.n_population
    rates = [eps.fpr, eps.fnr, result.empirical.fpr, result.empirical.fnr]
    low = _axis_low([eps.delta, 1.0 / n_pop, 1.0 / n_train, *rates])
    high = 1.0 - _axis_low([1.0 / n_pop, 1.0 / n_train, *(1.0 - r for r in rates if _finite(r))])
    tail = np.geomspace(low / 10.0, 0.5, BOUNDARY_POINTS)
    x = np.unique(np.concatenate([tail, 1.0 - tail]))
    e, d = eps.epsilon, eps.delta
    boundary = np.maximum.reduce(
        [np.zeros_like(x), 1.0 - d - np.exp(min(e, 700.0)) * x, np.exp(-e) * (1.0 - d - x)]
    )
    mu = _gdp_mu(eps)
    return TradeoffFigure(
        axis=(low, high),
        smallest_supported_fpr=1.0 / n_pop,
        smallest_supported_fnr=1.0 / n_train,
        boundary=Curve(x, boundary),
        boundary_corner=dp_boundary_corner(e, d),
        no_leak=Curve(x[[0, -1]], 1.0 - x[[0, -1]]),
        empirical=observed_tradeoff(result.train_losses, result.population_losses, low),
        fitted=_fitted_tradeoff(eps, low),
        gdp_mu=mu,
        gdp=None if mu is None else Curve(x, ndtr(-ndtri(x) - mu)),
        star=_rate_point(eps),
        empirical_star=_rate_point(result.empirical),
    )


# --- the attacks' ROC curves --------------------------------------------------------------------


def roc_points(
    member_scores: FloatArray,
    nonmember_scores: FloatArray,
    *,
    low_counts: int = ROC_LOW_COUNTS,
    levels: int = ROC_LEVELS,
    keep: Sequence[float] = READING_FPRS,
) -> tuple[IntArray, IntArray]:
    """(flagged non-members, found members) at a bounded set of corners of the ROC curve.

    The test "member if score ≤ τ" at every distinct score τ (and below all of them)
    gives the empirical curve; points inside a horizontal or vertical run are
    dropped. Kept: every corner with at most ``low_counts`` flagged non-members
    (the steps of the low end, exact), and the tops of the steps on either side of
    ``levels`` FPRs evenly spaced in log FPR from 1/n to 1 and of the FPRs in
    ``keep``, so that at every FPR kept the TPR is the largest observed there. At
    most ``2 (low_counts + 1) + 2 (levels + len(keep)) + 1`` corners, ascending.
    """
    members, others = np.sort(member_scores), np.sort(nonmember_scores)
    thresholds = np.unique(np.concatenate([members, others]))
    zero = np.zeros(1, dtype=np.int64)
    flagged = np.concatenate([zero, np.searchsorted(others, thresholds, side="right")])
    found = np.concatenate([zero, np.searchsorted(members, thresholds, side="right")])
    corner = np.ones(flagged.size, dtype=bool)
    for counts in (flagged, found):
        corner[1:-1] &= ~((counts[1:-1] == counts[:-2]) & (counts[1:-1] == counts[2:]))
    flagged, found = flagged[corner], found[corner]
    n = others.size
    grid = np.concatenate([np.geomspace(1.0 / n, 1.0, levels), np.asarray(keep, dtype=float)])
    # The top corner of the step at each level and of the next step after it.
    below = np.searchsorted(flagged, grid * n * (1.0 + 1e-12), side="right") - 1
    after = flagged[np.minimum(below + 1, flagged.size - 1)]
    chosen = np.unique(
        np.concatenate(
            [
                np.flatnonzero(flagged <= low_counts),
                below,
                np.searchsorted(flagged, after, side="right") - 1,
                [flagged.size - 1],
            ]
        )
    )
    return flagged[chosen].astype(np.int64), found[chosen].astype(np.int64)


def _attack_curve(attack: AttackResult, strongest: bool) -> AttackCurve:
    n, m = attack.nonmember_scores.size, attack.member_scores.size
    flagged, found = roc_points(attack.member_scores, attack.nonmember_scores)
    # The step function TPR(x) = the largest TPR of a test with FPR ≤ x: from each corner
    # along to the next one's FPR, then up to its TPR (ties are steps, not chords).
    flagged = np.concatenate([flagged[:1], np.repeat(flagged[1:], 2)])
    found = np.concatenate([np.repeat(found[:-1], 2), found[-1:]])
    fpr, tpr = np.maximum(flagged, 1) / n, np.maximum(found, 1) / m
    # Clipping counts of 0 to 1, and the steps, repeat points; draw each once.
    fresh = np.ones(fpr.size, dtype=bool)
    fresh[1:] = (fpr[1:] != fpr[:-1]) | (tpr[1:] != tpr[:-1])
    marks = tuple(
        TprMark(r.fpr, r.tpr_observed, max(r.fpr, 1.0 / n), max(r.tpr_observed, 1.0 / m))
        for r in attack.readings.tpr_at_fpr
    )
    return AttackCurve(
        name=attack.name,
        fpr=fpr[fresh],
        tpr=tpr[fresh],
        strongest=strongest,
        epsilon=float(attack.epsilon.epsilon),
        auc=float(attack.auc),
        n_members=m,
        n_nonmembers=n,
        marks=marks,
    )


def attack_curves(result: AuditResult) -> AttackCurvesFigure | None:
    """The ROC curves of every attack; None when the loss attack alone ran (its trade-off
    has its own chart) or an attack's scores are not at hand."""
    attacks, strongest = result.attacks, result.strongest_attack
    if strongest is None or [a.name for a in attacks] == ["loss"]:
        return None
    if any(not (a.member_scores.size and a.nonmember_scores.size) for a in attacks):
        return None
    curves = tuple(_attack_curve(a, a is strongest) for a in attacks)
    n = max(curve.n_nonmembers for curve in curves)
    m = max(curve.n_members for curve in curves)
    low = float(10.0 ** math.floor(math.log10(min(1.0 / n, 1.0 / m)) + 1e-9))
    e, d = float(strongest.epsilon.epsilon), float(strongest.epsilon.delta)
    bound = None
    if math.isfinite(e) and math.exp(min(e, 700.0)) * low + d < 1.0:
        # A straight line of slope 1 on log-log axes once e^ε x ≫ δ; it ends at TPR = 1.
        x = np.geomspace(low, (1.0 - d) * math.exp(-e), BOUNDARY_POINTS)
        bound = Curve(x, np.minimum(1.0, math.exp(e) * x + d))
    return AttackCurvesFigure(
        axis=(low, 1.0),
        curves=curves,
        most_nonmembers=n,
        most_members=m,
        smallest_fpr=1.0 / n,
        smallest_tpr=1.0 / m,
        bound=bound,
        bound_epsilon=e,
        bound_delta=d,
    )


# --- goodness of fit -----------------------------------------------------------------------------


def _ks_side(
    values: FloatArray, components: tuple[int, ...], sample_sizes: Sequence[int], seed: int
) -> KSGridSide:
    from threadpoolctl import threadpool_limits

    sizes = tuple(sorted({min(int(s), values.size // 2) for s in sample_sizes}))
    try:
        # Thread pools cost more than they save on one-dimensional fits of this size.
        with threadpool_limits(1):
            table = ks_table(values, components=components, sample_sizes=sizes, seed=seed)
    except EpsstarError as error:
        return KSGridSide(used=int(values.size), error=str(error))
    cells = {(t.n_components, t.n_samples): t.pvalue for t in table}
    rows = tuple(KSGridRow(k, tuple(cells[(k, s)] for s in sizes)) for k in components)
    return KSGridSide(used=int(values.size), sample_sizes=sizes, rows=rows)


def ks_grid(
    result: AuditResult,
    *,
    components: Sequence[int] = KS_GRID_COMPONENTS,
    sample_sizes: Sequence[int] = KS_GRID_SAMPLE_SIZES,
    max_values: int = KS_GRID_MAX_VALUES,
) -> KSGrid | None:
    """Appendix 8.2's grid of hold-out KS p-values per side, on a seeded subsample.

    Sample sizes above half a side's values become half its values. None when
    the method fits no transform or ``components`` or ``sample_sizes`` is empty.
    """
    eps = result.epsilon
    ks, sizes = tuple(int(k) for k in components), tuple(int(s) for s in sample_sizes)
    if eps.transform is None or not ks or not sizes:
        return None
    rng = np.random.default_rng([eps.seed, 82])
    sides: list[KSGridSide] = []
    for losses in (result.train_losses, result.population_losses):
        values = eps.transform.forward(losses)
        if values.size > max_values:
            values = rng.choice(values, size=max_values, replace=False)
        sides.append(_ks_side(values, ks, sizes, eps.seed))
    return KSGrid(components=ks, max_values=int(max_values), train=sides[0], population=sides[1])


# --- the estimator in words ---------------------------------------------------------------------


def estimator_description(method: str, family: str | None, level: float | None = None) -> str:
    """The names table's description of ``method`` (and of ``family`` when one was fitted),
    with the ``level`` its leak test used where one is given."""
    if method not in METHODS:
        return f"uses the '{method}' estimator (docs/accuracy.md)"
    described = METHODS[method].description
    if level is not None:
        described = described.replace(TESTED_LEVEL, f"level {level:.3g}")
    if family is not None and family in FAMILIES:
        described += f" (here {FAMILIES[family].description})"
    return described


# --- everything ----------------------------------------------------------------------------------


def audit_figures(
    result: AuditResult,
    *,
    ks_components: Sequence[int] = KS_GRID_COMPONENTS,
    ks_sample_sizes: Sequence[int] = KS_GRID_SAMPLE_SIZES,
    ks_max_values: int = KS_GRID_MAX_VALUES,
) -> AuditFigures:
    """The figures of ``result``'s report; ``ks_*`` set the goodness-of-fit grid.

    The grid fits up to ``2 · len(ks_components) · len(ks_sample_sizes)``
    mixtures (about 2 s with the defaults); ``ks_components=()`` leaves it out.
    """
    return AuditFigures(
        losses=loss_figure(result),
        transformed=transformed_figure(result),
        tradeoff=tradeoff_figure(result),
        ks_grid=ks_grid(
            result,
            components=ks_components,
            sample_sizes=ks_sample_sizes,
            max_values=ks_max_values,
        ),
        estimator=estimator_description(
            result.epsilon.method, result.epsilon.family, 1 - result.lower_bound.confidence
        ),
        attacks=attack_curves(result),
        fits=fit_rows(result),
        noise=reading_noise(
            result.readings,
            result.epsilon.n_train,
            result.epsilon.n_population,
            result.lower_bound.confidence,
            epsilon=result.epsilon_star,
            delta=result.delta,
        ),
        attack_histograms=() if result.text is None else attack_histograms(result),
    )
