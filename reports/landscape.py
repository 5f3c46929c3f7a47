"""The privacy–utility landscape of many audited models (Figures 1-2 of the Epsilon* paper).

Render only: :func:`epsstar.audit.landscape_data.landscape` computes every number
drawn (per-strategy means and min–max bars, the Pareto frontier, the densities per
category, the axis ranges) into a :class:`~epsstar.audit.landscape_data.Landscape`;
this module draws it as inline SVG and fills the template's context. One point per
strategy at the mean Epsilon* and mean utility over its repeats, with min–max bars
on both axes; the Pareto frontier (lower Epsilon*, higher utility); and marginal
densities of Epsilon* and utility per category: DP or baseline.

``load_results`` is :func:`epsstar.audit.landscape_data.read_results`, under the
name it has always had here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from epsstar.audit.landscape_data import read_results as load_results

from .svg import Chart

if TYPE_CHECKING:
    from markupsafe import Markup

    from epsstar.audit.landscape_data import Landscape, Spread, StrategyPoint

__all__ = ["landscape_context", "load_results", "main_chart", "marginal_charts"]

#: Pixel sizes: the main chart's plot (square), the marginal charts' depth, margins.
_SIZE, _SIDE, _GAP = 520, 150, (16, 20, 48, 64)


def _utility_label(utility: str) -> str:
    return "AUROC" if utility == "auroc" else "accuracy"


def _category(strategy: StrategyPoint) -> str:
    return "DP" if strategy.privacy.dp else "baseline"


def _link(report: Path | None, out_dir: Path) -> str | None:
    """The report's address relative to the landscape's folder."""
    if report is None:
        return None
    relative = os.path.relpath(report.resolve(), out_dir.resolve())
    return quote(Path(relative).as_posix())


def _describe(params: Mapping[str, Any]) -> str:
    shown = {k: v for k, v in params.items() if k != "seed"}
    return ", ".join(f"{k} = {v}" for k, v in shown.items()) or "no hyper-parameters recorded"


def _tooltip(s: StrategyPoint, eps: Spread, util: Spread, label: str, link: str | None) -> str:
    return (
        f"{s.name} ({_category(s)}, {len(s.epsilons)} models): Epsilon* "
        f"{eps.mean:.3f} [{eps.low:.3f}, {eps.high:.3f}], {label} "
        f"{util.mean:.4f} [{util.low:.4f}, {util.high:.4f}]; "
        f"{_describe(s.params)}"
        + ("; on the Pareto frontier" if s.pareto else "")
        + ("; click for its report" if link else "")
    )


def main_chart(data: Landscape, links: Mapping[str, str | None]) -> Markup:
    """Strategies at their means with min–max bars, and the Pareto frontier."""
    label = _utility_label(data.utility)
    chart = Chart(
        "Privacy-utility landscape",
        data.epsilon_range,
        data.utility_range,
        "Epsilon* (lower = more private)",
        f"{label} on population data (higher = more useful)",
        width=_SIZE + 40,
        height=_SIZE,
        margin=_GAP,
    )
    chart.line(data.frontier_x, data.frontier_y, css="pareto-line", label="Pareto frontier")
    plotted = [(s, s.epsilon, s.utility) for s in data.strategies if s.epsilon and s.utility]
    for _, eps, util in plotted:
        chart.segment(eps.low, util.mean, eps.high, util.mean, css="errorbar")
        chart.segment(eps.mean, util.low, eps.mean, util.high, css="errorbar")
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
    return chart.render()


def marginal_charts(data: Landscape) -> tuple[Markup, Markup]:
    """Densities of Epsilon* (above the main chart) and utility (to its right) per category."""
    label = _utility_label(data.utility)
    top = Chart(
        "Epsilon* density by category",
        data.epsilon_range,
        data.epsilon_density_range,
        "",
        "density",
        width=_SIZE + 40,
        height=_SIDE,
        margin=(8, 20, 22, 64),
    )
    right = Chart(
        f"{label} density by category",
        data.utility_density_range,
        data.utility_range,
        "density",
        "",
        width=_SIDE,
        height=_SIZE,
        margin=(_GAP[0], 8, _GAP[2], 8),
        tick_labels=(True, False),
    )
    for marginal in data.marginals:
        css = "kde-dp" if marginal.dp else "kde-baseline"
        rug = "rug-dp" if marginal.dp else "rug-baseline"
        if marginal.epsilon_density is not None:
            top.line(data.epsilon_grid, marginal.epsilon_density, css=css)
        for value in marginal.epsilons:
            top.segment(value, 0.0, value, data.epsilon_tick, css=rug)
        if marginal.utility_density is not None:
            right.line(marginal.utility_density, data.utility_grid, css=css)
        for value in marginal.utilities:
            right.segment(0.0, value, data.utility_tick, value, css=rug)
    return top.render(legend=False), right.render(legend=False)


def _row(s: StrategyPoint, link: str | None) -> dict[str, Any]:
    """One strategy as the table shows it."""
    return {
        "name": s.name,
        "category": _category(s),
        "describe": _describe(s.params),
        "n_models": s.n_models,
        "n_failed": s.n_failed,
        "eps_mean": s.epsilon.mean if s.epsilon else None,
        "eps_min": s.epsilon.low if s.epsilon else None,
        "eps_max": s.epsilon.high if s.epsilon else None,
        "mechanism": s.mechanism_epsilon,
        "util_mean": s.utility.mean if s.utility else None,
        "util_min": s.utility.low if s.utility else None,
        "util_max": s.utility.high if s.utility else None,
        "link": link,
        "pareto": s.pareto,
    }


def landscape_context(data: Landscape, target: Path) -> dict[str, Any]:
    """Everything the template shows; report links relative to ``target``'s folder."""
    links = {s.name: _link(s.report, target.parent) for s in data.strategies}
    top, right = marginal_charts(data)
    return {
        "utility": data.utility,
        "utility_label": _utility_label(data.utility),
        "strategies": [_row(s, links[s.name]) for s in data.strategies],
        "n_models": data.n_models,
        "charts": {
            "main": main_chart(data, links),
            "top": top,
            "right": right,
            "kde": any(m.epsilon_density is not None for m in data.marginals),
        },
    }
