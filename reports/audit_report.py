"""The HTML report of one audit: verdict, readings, charts, goodness of fit, provenance.

Render only: every number drawn comes from the :class:`~epsstar.audit.output.result.AuditResult`
(its own fields) or from its :class:`~epsstar.audit.output.figures.AuditFigures` (histograms,
densities, curves, axis ranges, the goodness-of-fit grid), which
:func:`epsstar.audit.output.figures.audit_figures` computes. This module turns them into inline
SVG and the template's context; it computes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from epsstar import __version__
from epsstar.audit.output.figures import (
    HISTOGRAM_BINS,
    KS_GRID_COMPONENTS,
    KS_GRID_MAX_VALUES,
    KS_GRID_SAMPLE_SIZES,
)

from .attack_histograms import AttackHistogramChart, attack_histogram_charts
from .numbers import number, percent, rate
from .slice_chart import slice_chart
from .svg import Chart

if TYPE_CHECKING:
    from markupsafe import Markup

    from epsstar.audit.output.figures import (
        AttackCurvesFigure,
        AuditFigures,
        ClippedLosses,
        FitRow,
        Histogram,
        HistogramFigure,
        KSGrid,
        KSGridSide,
        ReadingNoise,
        TradeoffFigure,
    )
    from epsstar.audit.output.result import AuditResult
    from epsstar.audit.output.slice_result import SliceRow

__all__ = [
    "HISTOGRAM_BINS",
    "KS_GRID_COMPONENTS",
    "KS_GRID_MAX_VALUES",
    "KS_GRID_SAMPLE_SIZES",
    "AuditContext",
    "attacks_chart",
    "audit_context",
    "loss_chart",
    "tradeoff_chart",
    "transformed_chart",
]


# --- charts ------------------------------------------------------------------------------------

#: Pixel sizes of the charts' drawing (they scale to the page's width): histograms, trade-off.
HISTOGRAM_SIZE = (960, 380)
TRADEOFF_SIZE = (960, 700)
ATTACKS_SIZE = (960, 640)


def loss_chart(figure: HistogramFigure) -> Markup:
    """Loss histograms, each side as a percentage of its records."""
    bars = figure.histogram
    width, height = HISTOGRAM_SIZE
    chart = Chart(
        "Losses of training and population records",
        figure.x_range,
        figure.y_range,
        "loss (lower = the model fits the record better)",
        "% of the side's records",
        width=width,
        height=height,
    )
    chart.bars(bars.edges, bars.population.heights, css="bar-population", label="population")
    chart.bars(bars.edges, bars.train.heights, css="bar-train", label="training")
    low, high = figure.x_range
    for clipped in figure.clipped:
        if clipped.bar_top is None:
            continue
        left = clipped.value < (low + high) / 2
        chart.text(
            clipped.value,
            clipped.bar_top,
            f"← clipped probabilities (loss {number(clipped.value, '.4g')})"
            if left
            else f"clipped probabilities (loss {number(clipped.value, '.4g')}) →",
            dx=14 if left else -14,
            dy=-2,
            anchor="start" if left else "end",
        )
    return chart.render()


def transformed_chart(figure: HistogramFigure) -> Markup:
    """Density histograms of the transformed losses φ with the fitted densities."""
    bars = figure.histogram
    width, height = HISTOGRAM_SIZE
    chart = Chart(
        "Transformed losses and fitted densities",
        figure.x_range,
        figure.y_range,
        "transformed loss φ (higher = lower loss)",
        "density",
        width=width,
        height=height,
    )
    chart.bars(bars.edges, bars.population.heights, css="bar-population", label="population φ")
    chart.bars(bars.edges, bars.train.heights, css="bar-train", label="training φ")
    fitted = figure.fitted
    if fitted is not None:
        family = fitted.family
        chart.line(
            fitted.x, fitted.population, css="fit-population", label=f"population {family} fit"
        )
        chart.line(fitted.x, fitted.train, css="fit-train", label=f"training {family} fit")
    return chart.render()


def _tradeoff_points(chart: Chart, figure: TradeoffFigure) -> None:
    """The boundary's corner and the tests that attain Epsilon* and the empirical Epsilon*."""
    corner = figure.boundary_corner
    chart.point(
        corner.fpr,
        corner.fnr,
        css="point-corner",
        radius=4,
        label="corner of the boundary",
        tooltip=f"the boundary's two lines cross at FPR = FNR = (1 − δ)/(1 + e^ε*) "
        f"= {number(corner.fpr, '.3g')}",
    )
    if (point := figure.empirical_star) is not None:
        chart.point(
            point.fpr,
            point.fnr,
            css="point-empirical",
            label="empirical ε* attained",
            tooltip=f"empirical ε* = {point.epsilon:.4g} at FPR {rate(point.fpr, 3)}, "
            f"FNR {rate(point.fnr, 3)}",
        )
    if (point := figure.star) is not None:
        chart.point(
            point.fpr,
            point.fnr,
            css="point-star",
            radius=6,
            label="ε* attained",
            tooltip=f"ε* = {point.epsilon:.4g} at FPR {rate(point.fpr, 3)}, "
            f"FNR {rate(point.fnr, 3)}",
        )


def tradeoff_chart(result: AuditResult, figure: TradeoffFigure) -> Markup:
    """FNR against FPR on log-odds axes: the curves, the no-leak line, the ε* points.

    Drawn bottom to top: the unsupported bands, the no-leak line, the μ-GDP curve,
    the observed and fitted curves, the (ε*, δ) boundary with its corner, the points;
    the boundary is drawn over the μ-GDP curve, which touches it at the ε* point.
    """
    eps = result.epsilon
    low, high = figure.axis
    width, height = TRADEOFF_SIZE
    chart = Chart(
        "Trade-off between false positives and false negatives",
        figure.axis,
        figure.axis,
        "FPR: share of non-members flagged as members (log-odds scale)",
        "FNR: share of members missed (log-odds scale)",
        x_scale="logit",
        y_scale="logit",
        width=width,
        height=height,
    )
    chart.region(
        (low, figure.smallest_supported_fpr),
        (low, high),
        css="unsupported",
        label="not supported by the data (extrapolated)",
        tooltip=f"FPR below 1/{eps.n_population:,} population records: extrapolated",
    )
    chart.region(
        (low, high),
        (low, figure.smallest_supported_fnr),
        css="unsupported",
        tooltip=f"FNR below 1/{eps.n_train:,} training records: extrapolated",
    )
    # The mirrored corners: 1 - FPR and 1 - FNR below one record's worth of data.
    chart.region(
        (1.0 - figure.smallest_supported_fpr, high),
        (low, high),
        css="unsupported",
        tooltip=f"1 − FPR below 1/{eps.n_population:,} population records: extrapolated",
    )
    chart.region(
        (low, high),
        (1.0 - figure.smallest_supported_fnr, high),
        css="unsupported",
        tooltip=f"1 − FNR below 1/{eps.n_train:,} training records: extrapolated",
    )
    chart.line(
        figure.no_leak.x,
        figure.no_leak.y,
        css="no-leak",
        label="no leak: FNR = 1 − FPR",
        tooltip="a test that learns nothing about membership: FNR = 1 − FPR",
    )
    if figure.gdp is not None:
        label = f"μ-GDP, μ = {figure.gdp_mu:.4g}"
        chart.line(figure.gdp.x, figure.gdp.y, css="gdp", label=label)
    chart.line(
        figure.empirical.x, figure.empirical.y, css="curve-empirical", label="observed (empirical)"
    )
    if figure.fitted is not None:
        label = f"fitted ({eps.family})"
        chart.line(figure.fitted.x, figure.fitted.y, css="curve-fitted", label=label)
    boundary = figure.boundary
    label = f"(ε*, δ) boundary, ε* = {eps.epsilon:.4f}"
    chart.line(boundary.x, boundary.y, css="dp-boundary", label=label)
    _tradeoff_points(chart, figure)
    return chart.render()


def attacks_chart(figure: AttackCurvesFigure) -> Markup:
    """Every attack's observed ROC curve on log-log axes, the strongest drawn last.

    Drawn bottom to top: the bands below one record, the diagonal, the strongest
    attack's (ε*, δ) bound, the FPRs of the readings, the curves, the readings' TPRs.
    """
    low, high = figure.axis
    width, height = ATTACKS_SIZE
    chart = Chart(
        "ROC curves of the membership attacks",
        figure.axis,
        figure.axis,
        "FPR: share of non-members flagged as members (log scale)",
        "TPR: share of members found (log scale)",
        x_scale="log",
        y_scale="log",
        width=width,
        height=height,
    )
    chart.region(
        (low, figure.smallest_fpr),
        (low, high),
        css="unsupported",
        label="below one record: counts of 0 drawn at 1",
        tooltip=f"FPR below one non-member ({number(figure.smallest_fpr, '.3g')})",
    )
    chart.region(
        (low, high),
        (low, figure.smallest_tpr),
        css="unsupported",
        tooltip=f"TPR below one member ({number(figure.smallest_tpr, '.3g')})",
    )
    chart.line(
        figure.axis,
        figure.axis,
        css="no-leak",
        label="random guessing: TPR = FPR",
        tooltip="a test that learns nothing about membership: TPR = FPR",
    )
    strongest = figure.strongest
    if figure.bound is not None:
        chart.line(
            figure.bound.x,
            figure.bound.y,
            css="dp-boundary",
            label=f"(ε*, δ) bound of {strongest.name}, ε* = {figure.bound_epsilon:.3g}",
            tooltip=f"TPR ≤ e^ε*·FPR + δ with ε* = {figure.bound_epsilon:.4g}, "
            f"δ = {figure.bound_delta:.3g}",
        )
    for mark in strongest.marks:
        chart.segment(mark.fpr, low, mark.fpr, high, css="reading-fpr")
        chart.text(mark.fpr, high, f"{percent(mark.fpr)} FPR", dy=10)
    for curve in sorted(figure.curves, key=lambda curve: curve.strongest):
        css = f"attack-{curve.name}" + (" strongest" if curve.strongest else "")
        name = f"{curve.name} (strongest)" if curve.strongest else curve.name
        chart.line(
            curve.fpr,
            curve.tpr,
            css=css,
            label=f"{name}: ε* = {curve.epsilon:.3g}, AUC = {curve.auc:.3f}",
            tooltip=f"{name}: {curve.n_members:,} members, {curve.n_nonmembers:,} non-members",
        )
    for curve in figure.curves:
        for mark in curve.marks:
            chart.point(
                mark.x,
                mark.y,
                css=f"mark-{curve.name}",
                radius=4.5,
                tooltip=f"{curve.name}: TPR {rate(mark.tpr, 4)} at {percent(mark.fpr)} FPR "
                "(the attacks table)",
            )
    chart.legend("dot", "mark-legend", "TPR at 0.1 % and 1 % FPR (the table)")
    return chart.render()


@dataclass(frozen=True, slots=True)
class KSContext:
    """The goodness-of-fit grid as the template walks it: sides by name, rows of
    (components, p-values)."""

    sides: dict[str, KSGridSide]
    max_values: int
    components: list[int]


def _ks_context(grid: KSGrid | None) -> KSContext | None:
    if grid is None:
        return None
    return KSContext(
        {"train": grid.train, "population": grid.population},
        grid.max_values,
        list(grid.components),
    )


# --- the whole context ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Charts:
    """The report's charts as inline SVG (``None``: not drawn for this audit)."""

    loss: Markup
    transformed: Markup | None
    tradeoff: Markup
    slices: Markup | None
    attacks: Markup | None
    #: One histogram of each attack's scores (text audits; none for tables).
    attack_histograms: tuple[AttackHistogramChart, ...] = ()


@dataclass(frozen=True, slots=True)
class Histograms:
    """The histograms of the losses and of the transformed losses (``None``: no transform)."""

    loss: Histogram
    transformed: Histogram | None


@dataclass(frozen=True, slots=True)
class Columns:
    """Table columns that have something to show (a column empty in every row is left out)."""

    readings_fitted: bool
    utility_note: bool


@dataclass(frozen=True, slots=True)
class SmallestSupported:
    """The smallest error rates one record's worth of data supports: 1/n of each side."""

    train: float
    population: float


@dataclass(frozen=True, slots=True)
class Reasons:
    """Why numbers shown side by side differ, each ``""`` where they agree
    (:mod:`epsstar.audit.side_by_side`), and whether the headline came from a fit."""

    empirical: str
    premise: str
    text_premise: str
    advantage: str
    tpr: tuple[str, ...]
    gate_level: str
    untested_headline: str
    fitted_headline: bool


def _reasons(result: AuditResult, noise: ReadingNoise | None) -> Reasons:
    from epsstar.audit import side_by_side as why

    baseline = result.blind_baseline
    text = None if result.text is None else result.text.blind_baseline
    estimate = result.epsilon
    return Reasons(
        empirical=why.empirical_reason(result),
        premise="" if baseline is None else why.premise_reason(baseline),
        text_premise=""
        if text is None
        else why.lower_bound_rule(text.epsilon.epsilon, text.lower_bound),
        advantage=why.advantage_reason(noise),
        tpr=tuple(why.tpr_reason(noise, index) for index in range(len(result.readings.tpr_at_fpr))),
        gate_level="" if estimate.leak_test is None else why.gate_level_reason(result),
        untested_headline=why.untested_headline_reason(result),
        fitted_headline=why.fitted_headline(estimate),
    )


@dataclass(frozen=True, slots=True)
class AuditContext:
    """Everything the template shows (``ctx``): the result's fields, its figures drawn as SVG."""

    result: AuditResult
    version: str
    fits: tuple[FitRow, ...]
    timings: tuple[tuple[str, float], ...]
    epsilon_star_repr: str
    verdict: str
    estimator: str
    charts: Charts
    attack_curves: AttackCurvesFigure | None
    histograms: Histograms
    mu: float | None
    boundary_corner: float
    clipped: tuple[ClippedLosses, ...]
    loss_tails: tuple[float, float] | None
    columns: Columns
    smallest_supported: SmallestSupported
    ks_grid: KSContext | None
    small_slices: tuple[SliceRow, ...]
    headline_attack: str | None
    bins: int
    central_share: float
    noise: ReadingNoise | None
    reasons: Reasons


def _columns(result: AuditResult) -> Columns:
    return Columns(
        readings_fitted=any(t.tpr_fitted is not None for t in result.readings.tpr_at_fpr),
        utility_note=any(u.auroc_note for u in result.utility.values()),
    )


def _small_slices(result: AuditResult) -> tuple[SliceRow, ...]:
    """The slices with too few records on a side for an estimate, listed apart."""
    return () if result.slices is None else result.slices.too_small


def release_verdict(result: AuditResult) -> str:
    """The release gate's verdict, as the exit code decides it: FAIL when a gate that was set
    failed (``--max-epsilon`` or a text audit's ``--max-extraction-rate``), PASS when every gate
    set passed, NO GATE when none was set."""
    extraction = None if result.text is None else result.text.extraction_passed
    verdicts = [passed for passed in (result.passed, extraction) if passed is not None]
    if not verdicts:
        return "NO GATE"
    return "PASS" if all(verdicts) else "FAIL"


def audit_context(result: AuditResult, figures: AuditFigures) -> AuditContext:
    """Everything the template shows: the result's fields, its figures drawn as SVG."""
    losses, transformed, tradeoff = figures.losses, figures.transformed, figures.tradeoff
    provenance = result.provenance
    return AuditContext(
        result=result,
        version=__version__,
        fits=figures.fits,
        timings=()
        if provenance is None or provenance.seconds is None
        else provenance.seconds.steps(),
        epsilon_star_repr=repr(float(result.epsilon_star)),
        verdict=release_verdict(result),
        estimator=figures.estimator,
        charts=Charts(
            loss=loss_chart(losses),
            transformed=None if transformed is None else transformed_chart(transformed),
            tradeoff=tradeoff_chart(result, tradeoff),
            slices=None
            if result.slices is None
            else slice_chart(result.slices, result.epsilon_star),
            attacks=None if figures.attacks is None else attacks_chart(figures.attacks),
            attack_histograms=attack_histogram_charts(figures.attack_histograms),
        ),
        attack_curves=figures.attacks,
        histograms=Histograms(
            loss=losses.histogram,
            transformed=None if transformed is None else transformed.histogram,
        ),
        mu=tradeoff.gdp_mu,
        boundary_corner=tradeoff.boundary_corner.fpr,
        clipped=losses.clipped,
        loss_tails=losses.tails,
        columns=_columns(result),
        smallest_supported=SmallestSupported(
            train=tradeoff.smallest_supported_fnr,
            population=tradeoff.smallest_supported_fpr,
        ),
        ks_grid=_ks_context(figures.ks_grid),
        small_slices=_small_slices(result),
        headline_attack=None if result.headline_attack is None else result.headline_attack.name,
        bins=losses.histogram.bins,
        central_share=losses.histogram.central_share,
        noise=figures.noise,
        reasons=_reasons(result, figures.noise),
    )
