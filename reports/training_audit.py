"""The HTML report of an audit of a training procedure (``epsstar audit-training --report``).

Render only: :func:`epsstar.audit.training_audit.figures.training_audit_figures` computes the
curves, points, boxes and histograms; this module draws them as inline SVG and fills the
template ``training-audit.html.j2``: the verdict in one sentence, what a refutation means and
what a pass does not, the claim's trade-off curve with its μ-GDP curve and each threat model's
measured (FPR, FNR) with its confidence box, the canaries' score histograms, the tightness
table and the seeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .svg import Chart

if TYPE_CHECKING:
    from markupsafe import Markup

    from epsstar.audit.training_audit.figures import ScoreHistogram, TrainingAuditFigures
    from epsstar.audit.training_audit.result import TightnessRow, TrainingAuditResult

__all__ = ["TrainingAuditContext", "render_training_audit"]

_WIDTH, _HEIGHT = 560, 420
_MARKS = ("point-empirical", "point-dp", "point-baseline", "point-corner", "point-star")


@dataclass(frozen=True, slots=True)
class ThreatModelSection:
    """One threat model's part of the report."""

    name: str
    sees: str
    score: str
    method: str
    epsilon_lower_bound: float
    epsilon_lower_gdp: float | None
    refutes: bool
    canaries: int
    histogram: Markup | None


@dataclass(frozen=True, slots=True)
class TrainingAuditContext:
    """What the template draws."""

    result: TrainingAuditResult
    verdict: str
    tradeoff: Markup
    mu: float
    sections: tuple[ThreatModelSection, ...]
    tightness: tuple[TightnessRow, ...]
    plotted: frozenset[str]


def _tradeoff(result: TrainingAuditResult, figures: TrainingAuditFigures) -> Markup:
    chart = Chart(
        "Trade-off curve of the claim and the measured tests",
        (0.0, 1.0),
        (0.0, 1.0),
        "false positive rate",
        "false negative rate",
        width=_WIDTH,
        height=_HEIGHT,
    )
    chart.line(
        figures.fpr,
        figures.gdp_fnr,
        css="gdp",
        label=f"μ-GDP curve of the claim (μ = {figures.mu:.3g})",
    )
    chart.line(
        figures.fpr,
        figures.claimed_fnr,
        css="dp-boundary",
        label=f"({result.claimed_epsilon:.3g}, {result.delta:.2g})-DP: no test can lie below",
    )
    drawn = zip(result.threat_models, figures.points, figures.bound_fnr, strict=True)
    for index, (audit, point, bound) in enumerate(drawn):
        name = audit.threat_model.name
        if bound is not None:
            chart.line(
                figures.fpr,
                bound,
                css="bound-curve",
                label=f"{name}: ε ≥ {audit.epsilon_lower_bound:.3g}, the bound that decides",
            )
        if point is None:
            continue
        mark = _MARKS[index % len(_MARKS)]
        if point.fpr_interval is not None and point.fnr_interval is not None:
            chart.region(point.fpr_interval, point.fnr_interval, css="confidence-box")
            label = f"{name}: measured (FPR, FNR); its box's upper corner decides"
        else:
            label = f"{name}: rates of the guesses, for reading only"
        chart.point(
            point.fpr,
            point.fnr,
            css=mark,
            label=label,
            tooltip=f"FPR {point.fpr:.3f} of {point.negatives}, FNR {point.fnr:.3f} of "
            f"{point.positives}",
        )
    return chart.render()


def _histogram(name: str, histogram: ScoreHistogram) -> Markup:
    edges = histogram.edges
    top = float(max(histogram.included.max(), histogram.excluded.max(), 1.0))
    chart = Chart(
        f"Scores of the canaries ({name})",
        (float(edges[0]), float(edges[-1])),
        (0.0, top * 1.08),
        "score",
        "canaries",
        width=_WIDTH,
        height=300,
    )
    chart.bars(edges, histogram.excluded, css="bar-population", label="left out")
    chart.bars(edges, histogram.included, css="bar-train", label="included")
    return chart.render()


def training_audit_context(
    result: TrainingAuditResult, figures: TrainingAuditFigures
) -> TrainingAuditContext:
    """The template's context for ``result`` and its ``figures``."""
    sections = tuple(
        ThreatModelSection(
            audit.threat_model.name,
            audit.threat_model.sees,
            audit.threat_model.score,
            audit.method,
            audit.epsilon_lower_bound,
            audit.epsilon_lower_gdp,
            audit.refutes,
            audit.canaries,
            None if histogram is None else _histogram(audit.threat_model.name, histogram),
        )
        for audit, histogram in zip(result.threat_models, figures.histograms, strict=True)
    )
    return TrainingAuditContext(
        result,
        result.verdict,
        _tradeoff(result, figures),
        figures.mu,
        sections,
        result.tightness,
        frozenset(
            audit.threat_model.name
            for audit, point in zip(result.threat_models, figures.points, strict=True)
            if point is not None
        ),
    )


def render_training_audit(result: TrainingAuditResult, path: str | Path) -> Path:
    """Write the report of ``result`` to ``path`` (atomically); returns the path."""
    from epsstar.audit.training_audit.figures import training_audit_figures
    from epsstar.reports import _write, environment

    context = training_audit_context(result, training_audit_figures(result))
    html = environment().get_template("training-audit.html.j2").render(ctx=context)
    return _write(html, path)
