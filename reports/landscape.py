"""The privacy–utility landscape of many audited models (Figures 1-2 of the Epsilon* paper).

Render only: :func:`epsstar.audit.output.landscape_data.landscape` computes every number
drawn (per-strategy means and min–max bars, the Pareto frontier, the densities per
category, the axis ranges) into a :class:`~epsstar.audit.output.landscape_data.Landscape`;
this module draws it as inline SVG and fills the template's context. One point per
strategy at the mean Epsilon* and mean utility over its repeats, with min–max bars
on both axes; the Pareto frontier (lower Epsilon*, higher utility); and marginal
densities of Epsilon* and utility per category: DP or baseline.

``load_results`` is :func:`epsstar.audit.output.landscape_data.read_results`, under the
name it has always had here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from epsstar.audit.output.landscape_data import MIN_DENSITY_VALUES
from epsstar.audit.output.landscape_data import read_results as load_results

from .numbers import number
from .svg import Anchor, Chart

if TYPE_CHECKING:
    from markupsafe import Markup

    from epsstar.audit.data.configs.manifest import HyperParameters
    from epsstar.audit.output.landscape_data import Landscape, Spread, StrategyPoint

__all__ = [
    "LandscapeContext",
    "StrategyRow",
    "landscape_context",
    "load_results",
    "main_chart",
    "marginal_charts",
    "place_labels",
    "strip_notes",
]

#: Pixel sizes of the drawing (it scales to the page's width): the main chart's width and
#: height, the marginal charts' depth, the main chart's margins (top, right, bottom, left).
_WIDTH, _SIZE, _SIDE, _GAP = 780, 560, 170, (16, 20, 48, 64)
#: Hyper-parameters not listed with the others: the seed differs between repeats, and the
#: targeted and accounted ε have their own column.
_NOT_LISTED = frozenset({"seed", "target_epsilon", "epsilon"})
#: Where a point's number may go, tried in order: (dx, dy, text-anchor) in pixels.
_LABEL_SPOTS: tuple[tuple[float, float, Anchor], ...] = (
    (9, -9, "start"),
    (-9, -9, "end"),
    (9, 10, "start"),
    (-9, 10, "end"),
    (11, 0, "start"),
    (-11, 0, "end"),
    (0, -14, "middle"),
    (0, 15, "middle"),
)
#: Dot strips of the margins: a dot's radius and the most pixels between stacked dots.
_DOT_RADIUS, _DOT_PITCH = 2.4, 5.5
#: Approximate width of a label's character and height of a label, in pixels.
_LABEL_CHARACTER, _LABEL_HEIGHT = 7.5, 13.0
_NUMBER = re.compile(r"[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?")


def _utility_label(utility: str) -> str:
    return "AUROC" if utility == "auroc" else "accuracy"


def _category(strategy: StrategyPoint) -> str:
    return _category_name(strategy.privacy.dp)


def _link(report: Path | None, out_dir: Path) -> str | None:
    """The report's address relative to the landscape's folder."""
    if report is None:
        return None
    relative = os.path.relpath(report.resolve(), out_dir.resolve())
    return quote(Path(relative).as_posix())


def _value(value: object) -> str:
    """A hyper-parameter's value: yes/no (also for a CSV manifest's "True" and "False"),
    whole numbers as they are, others to 3 digits."""
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        value = value.strip().lower() == "true"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) or (
        isinstance(value, str) and _NUMBER.fullmatch(value.strip()) and not value.isdigit()
    ):
        return number(float(value), ".3g")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return str(value)


def _settings(params: HyperParameters) -> list[str]:
    """``name = value`` of the hyper-parameters that are set, but those in _NOT_LISTED."""
    return [
        f"{k} = {_value(v)}"
        for k, v in params.items()
        if k not in _NOT_LISTED and v is not None and v != ""
    ]


def _describe(params: HyperParameters) -> str:
    return ", ".join(_settings(params)) or "none recorded"


def _dp_epsilon(s: StrategyPoint) -> tuple[str, str | None] | None:
    """The accountant's ε and the target it was trained for (when known); None for baselines."""
    privacy = s.privacy
    if not privacy.dp:
        return None
    accounted = None if privacy.epsilon is None else number(privacy.epsilon, ".3g")
    target = None if privacy.target_epsilon is None else number(privacy.target_epsilon, ".3g")
    if accounted is None:
        return ("—", f"target {target}") if target else ("not recorded", None)
    return accounted, None if target is None else f"target {target}"


def _tooltip(s: StrategyPoint, eps: Spread, util: Spread, label: str, link: str | None) -> str:
    return (
        f"{s.name} ({_category(s)}, {len(s.epsilons)} models): Epsilon* "
        f"{eps.mean:.3f} [{eps.low:.3f}, {eps.high:.3f}], {label} "
        f"{util.mean:.4f} [{util.low:.4f}, {util.high:.4f}]; "
        + (f"DP ε {' '.join(v for v in dp if v)}; " if (dp := _dp_epsilon(s)) else "")
        + _describe(s.params)
        + ("; on the Pareto frontier" if s.pareto else "")
        + ("; click for its report" if link else "")
    )


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    """Area shared by two boxes (left, top, right, bottom)."""
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    return max(width, 0.0) * max(height, 0.0)


def _label_box(
    x: float, y: float, text: str, spot: tuple[float, float, Anchor]
) -> tuple[float, float, float, float]:
    dx, dy, anchor = spot
    width = len(text) * _LABEL_CHARACTER
    left = x + dx - {"start": 0.0, "middle": width / 2, "end": width}[anchor]
    top = y + dy - _LABEL_HEIGHT / 2
    return left, top, left + width, top + _LABEL_HEIGHT


def place_labels(
    points: Sequence[tuple[float, float, str]],
    frame: tuple[float, float, float, float],
    radius: float = 7.0,
) -> list[tuple[float, float, Anchor]]:
    """Spots (dx, dy, anchor) for labels beside points at pixel positions (x, y, text).

    Each label takes the first of :data:`_LABEL_SPOTS` that covers no point, no label
    placed before it and stays inside ``frame`` (left, top, right, bottom); when none
    does, the spot that covers least.
    """
    dots = [(x - radius, y - radius, x + radius, y + radius) for x, y, _ in points]
    placed: list[tuple[float, float, float, float]] = []
    spots = []
    for x, y, text in points:
        best, best_cost = _LABEL_SPOTS[0], float("inf")
        for spot in _LABEL_SPOTS:
            box = _label_box(x, y, text, spot)
            outside = (box[2] - box[0]) * (box[3] - box[1]) - _overlap(box, frame)
            cost = outside + sum(_overlap(box, other) for other in (*dots, *placed))
            if cost < best_cost:
                best, best_cost = spot, cost
            if cost == 0:
                break
        placed.append(_label_box(x, y, text, best))
        spots.append(best)
    return spots


def main_chart(
    data: Landscape, links: Mapping[str, str | None], numbers: Mapping[str, int]
) -> Markup:
    """Strategies at their means with min–max bars, each numbered, and the Pareto frontier."""
    label = _utility_label(data.utility)
    chart = Chart(
        "Privacy-utility landscape",
        data.epsilon_range,
        data.utility_range,
        "Epsilon* (lower = more private)",
        f"{label} on population data (higher = more useful)",
        width=_WIDTH,
        height=_SIZE,
        margin=_GAP,
    )
    chart.line(data.frontier_x, data.frontier_y, css="pareto-line", label="Pareto frontier")
    plotted = [(s, s.epsilon, s.utility) for s in data.strategies if s.epsilon and s.utility]
    for s, eps, util in plotted:
        css = "errorbar-dp" if s.privacy.dp else "errorbar-baseline"
        chart.segment(eps.low, util.mean, eps.high, util.mean, css=css)
        chart.segment(eps.mean, util.low, eps.mean, util.high, css=css)
    seen: set[bool] = set()
    for s, eps, util in plotted:
        dp = s.privacy.dp
        legend = None
        if dp not in seen:
            seen.add(dp)
            legend = "DP strategy" if dp else "baseline (non-private) strategy"
        chart.point(
            eps.mean,
            util.mean,
            css=("point-dp" if dp else "point-baseline") + (" pareto" if s.pareto else ""),
            radius=6.5 if s.pareto else 5.5,
            label=legend,
            tooltip=_tooltip(s, eps, util, label, links[s.name]),
            href=links[s.name],
        )
    labels = [(chart.px(e.mean), chart.py(u.mean), str(numbers[s.name])) for s, e, u in plotted]
    spots = place_labels(labels, chart.plot_box)
    for (_, eps, util), (_, _, text), (dx, dy, anchor) in zip(plotted, labels, spots, strict=True):
        chart.text(eps.mean, util.mean, text, css="point-label", dx=dx, dy=dy, anchor=anchor)
    return chart.render()


def _pitch(chart: Chart, levels: int, axis: int) -> float:
    """Data units between two stacked dots of a dot strip, so that the tallest stack fits.

    ``axis`` is 1 for a vertical stack (the top chart), 0 for a horizontal one.
    """
    left, top, right, bottom = chart.plot_box
    pixels = (bottom - top) if axis else (right - left)
    span = chart.y_range if axis else chart.x_range
    step = min(_DOT_PITCH, 0.92 * pixels / max(levels, 1))
    return step / pixels * (span[1] - span[0])


def _dot_tooltip(category: str, what: str, value: float, digits: str) -> str:
    return f"a {category} model: {what} {number(value, digits)}"


def marginal_charts(data: Landscape) -> tuple[Markup, Markup]:
    """Densities of Epsilon* (above the main chart) and utility (to its right) per category,
    over a dot strip with one dot per model, stacked where models share a value."""
    label = _utility_label(data.utility)
    top = Chart(
        "Epsilon* density by category",
        data.epsilon_range,
        data.epsilon_density_range,
        "",
        "density",
        width=_WIDTH,
        height=_SIDE,
        margin=(8, _GAP[1], 22, _GAP[3]),
    )
    right = Chart(
        f"{label} density by category",
        data.utility_density_range,
        data.utility_range,
        "density",
        "",
        width=_SIDE,
        height=_SIZE,
        margin=(_GAP[0], 16, _GAP[2], 8),
        tick_labels=(True, False),
    )
    up, across = _pitch(top, data.epsilon_stack, 1), _pitch(right, data.utility_stack, 0)
    for marginal in data.marginals:
        css = "kde-dp" if marginal.dp else "kde-baseline"
        dot = "rug-dp" if marginal.dp else "rug-baseline"
        category = _category_name(marginal.dp)
        if marginal.epsilon_density is not None:
            top.line(data.epsilon_grid, marginal.epsilon_density, css=css)
        for value, level in zip(marginal.epsilons, marginal.epsilon_levels, strict=True):
            tip = _dot_tooltip(category, "Epsilon*", value, ".4f")
            top.point(value, (level + 0.5) * up, css=dot, radius=_DOT_RADIUS, tooltip=tip)
        if marginal.utility_density is not None:
            right.line(marginal.utility_density, data.utility_grid, css=css)
        for value, level in zip(marginal.utilities, marginal.utility_levels, strict=True):
            tip = _dot_tooltip(category, label, value, ".4f")
            right.point((level + 0.5) * across, value, css=dot, radius=_DOT_RADIUS, tooltip=tip)
    return top.render(legend=False), right.render(legend=False)


def _category_name(dp: bool) -> str:
    return "DP" if dp else "baseline"


def strip_notes(data: Landscape) -> list[str]:
    """What the margins show per category: the number of models and, where no curve is
    drawn, why (too few models, or all at one value: a point mass, not a density)."""
    notes = []
    for m in data.marginals:
        name = _category_name(m.dp)
        models = f"{len(m.epsilons)} {name} model{'s' if len(m.epsilons) != 1 else ''}"
        if m.epsilon_density is not None:
            notes.append(f"{models}, with a curve")
        elif (mass := m.point_mass) is not None and len(m.epsilons) >= MIN_DENSITY_VALUES:
            notes.append(f"{models}, all at Epsilon* {number(mass, '.4f')}: a point mass, no curve")
        else:
            notes.append(f"{models}: too few for a curve")
    return notes


@dataclass(frozen=True, slots=True)
class StrategyRow:
    """One strategy as the table shows it."""

    number: int
    name: str
    dp_epsilon: tuple[str, str | None] | None
    category: str
    settings: list[str]
    n_models: int
    n_failed: int
    eps_mean: float | None
    eps_min: float | None
    eps_max: float | None
    mechanism: float | None
    util_mean: float | None
    util_min: float | None
    util_max: float | None
    link: str | None
    pareto: bool


def _row(s: StrategyPoint, link: str | None, index: int) -> StrategyRow:
    return StrategyRow(
        number=index,
        name=s.name,
        dp_epsilon=_dp_epsilon(s),
        category=_category(s),
        settings=_settings(s.params),
        n_models=s.n_models,
        n_failed=s.n_failed,
        eps_mean=s.epsilon.mean if s.epsilon else None,
        eps_min=s.epsilon.low if s.epsilon else None,
        eps_max=s.epsilon.high if s.epsilon else None,
        mechanism=s.mechanism_epsilon,
        util_mean=s.utility.mean if s.utility else None,
        util_min=s.utility.low if s.utility else None,
        util_max=s.utility.high if s.utility else None,
        link=link,
        pareto=s.pareto,
    )


@dataclass(frozen=True, slots=True)
class LandscapeColumns:
    """Table columns that have something to show: the DP ε, the links to reports."""

    dp_epsilon: bool
    report: bool


@dataclass(frozen=True, slots=True)
class LandscapeLayout:
    """Widths of the main chart and of the marginal charts beside it, in pixels."""

    main: int
    side: int


@dataclass(frozen=True, slots=True)
class LandscapeCharts:
    """The charts as inline SVG, and whether any category has a density curve."""

    main: Markup
    top: Markup
    right: Markup
    kde: bool


@dataclass(frozen=True, slots=True)
class LandscapeContext:
    """Everything the template shows (``ctx``)."""

    utility: str
    utility_label: str
    strategies: list[StrategyRow]
    plotted: list[StrategyRow]
    n_models: int
    columns: LandscapeColumns
    layout: LandscapeLayout
    min_density_values: int
    charts: LandscapeCharts
    #: Per category: its number of models and whether (or why not) it has a curve.
    strip_notes: list[str]


def landscape_context(data: Landscape, target: Path) -> LandscapeContext:
    """Everything the template shows; report links relative to ``target``'s folder."""
    links = {s.name: _link(s.report, target.parent) for s in data.strategies}
    numbers = {s.name: index for index, s in enumerate(data.strategies, start=1)}
    rows = [_row(s, links[s.name], numbers[s.name]) for s in data.strategies]
    top, right = marginal_charts(data)
    return LandscapeContext(
        utility=data.utility,
        utility_label=_utility_label(data.utility),
        strategies=rows,
        plotted=[row for row, s in zip(rows, data.strategies, strict=True) if s.plotted],
        n_models=data.n_models,
        columns=LandscapeColumns(
            dp_epsilon=any(row.dp_epsilon for row in rows),
            report=any(row.link for row in rows),
        ),
        layout=LandscapeLayout(main=_WIDTH, side=_SIDE),
        min_density_values=MIN_DENSITY_VALUES,
        charts=LandscapeCharts(
            main=main_chart(data, links, numbers),
            top=top,
            right=right,
            kde=any(m.epsilon_density is not None for m in data.marginals),
        ),
        strip_notes=strip_notes(data),
    )
