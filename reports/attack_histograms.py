"""Each attack's scores on members and non-members as a histogram (text audits).

Render only: the bins and heights come from
:func:`epsstar.audit.output.figures.attack_histograms`; this module draws one chart per
attack, the same way as the loss histogram (each side as a percentage of its records), so
that a reader sees how far apart each attack pulls the training and population records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .svg import Chart

if TYPE_CHECKING:
    from markupsafe import Markup

    from epsstar.audit.output.figures import AttackHistogram

__all__ = ["ATTACK_HISTOGRAM_SIZE", "AttackHistogramChart", "attack_histogram_charts"]

#: Pixel size of each attack's chart (it scales to the page's width).
ATTACK_HISTOGRAM_SIZE = (960, 300)


@dataclass(frozen=True, slots=True)
class AttackHistogramChart:
    """One attack's chart with its name and what its score is (the figure's caption)."""

    name: str
    summary: str
    chart: Markup


def attack_histogram_chart(found: AttackHistogram) -> Markup:
    """One attack's score histograms, members and non-members."""
    figure, bars = found.figure, found.figure.histogram
    width, height = ATTACK_HISTOGRAM_SIZE
    chart = Chart(
        f"{found.name}: {found.summary}",
        figure.x_range,
        figure.y_range,
        f"{found.name} score (lower = more member-like)",
        "% of the side's records",
        width=width,
        height=height,
    )
    chart.bars(bars.edges, bars.population.heights, css="bar-population", label="population")
    chart.bars(bars.edges, bars.train.heights, css="bar-train", label="training")
    return chart.render()


def attack_histogram_charts(
    figures: tuple[AttackHistogram, ...],
) -> tuple[AttackHistogramChart, ...]:
    """:func:`attack_histogram_chart` of each attack, in the audit's order."""
    return tuple(
        AttackHistogramChart(found.name, found.summary, attack_histogram_chart(found))
        for found in figures
    )
