"""The chart of Epsilon* per slice (``--slice-by``): one row per slice with an estimate.

Render only: each row draws the slice's Epsilon* (a dot), its bootstrap interval (a bar)
and its lower bound (an open marker) from :class:`~epsstar.audit.output.slice_result.SliceResult`,
against the headline Epsilon* (a dashed line); the slice's name and record counts sit
above its row. Slices without an estimate are left to the table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .numbers import count, number
from .svg import Chart

if TYPE_CHECKING:
    from markupsafe import Markup

    from epsstar.audit.output.slice_result import SliceResult, SliceRow

__all__ = ["slice_chart"]

#: Width of the drawing and pixels per slice row.
WIDTH = 960
ROW_HEIGHT = 44


def _reach(row: SliceRow) -> float:
    """The largest value a row draws."""
    estimate = row.estimate
    values = [0.0]
    if estimate.epsilon is not None:
        values.append(estimate.epsilon.epsilon)
        if estimate.epsilon.interval is not None:
            values.append(estimate.epsilon.interval.high)
    if estimate.lower_bound is not None:
        values.append(estimate.lower_bound.epsilon)
    return max(values)


def slice_chart(sliced: SliceResult, headline: float) -> Markup | None:
    """Epsilon*, interval and lower bound of every estimated slice (``None``: no slice
    has an estimate)."""
    rows = sliced.estimated
    if not rows:
        return None
    high = max([headline, *(_reach(row) for row in rows)])
    top = max(0.5, high * 1.08)
    n = len(rows)
    chart = Chart(
        f"Epsilon* per slice of {sliced.column}",
        (-0.02 * top, top),
        (-0.6, n - 0.1),
        f"Epsilon* of the slice (δ = {number(sliced.delta, '.3g')}, as the headline)",
        "",
        width=WIDTH,
        height=64 + ROW_HEIGHT * n,
        margin=(16, 20, 48, 20),
        tick_labels=(True, False),
        css_class="chart slices",
    )
    chart.segment(headline, -0.6, headline, n - 0.1, css="headline-line")
    for index, row in enumerate(rows):
        y = n - 1 - index
        estimate = row.estimate
        if estimate.epsilon is None or estimate.lower_bound is None:  # not in `estimated`
            continue
        counts = f"{count(estimate.n_members)} members, {count(estimate.n_nonmembers)} non-members"
        chart.text(0.0, y, f"{row.shown()} · {counts}", css="slice-label", dx=6, dy=-15)
        interval = estimate.epsilon.interval
        if interval is not None:
            chart.segment(interval.low, y, interval.high, y, css="slice-interval")
        chart.point(
            estimate.lower_bound.epsilon,
            y,
            css="slice-bound",
            radius=4.5,
            tooltip=f"{row.label}: lower bound {number(estimate.lower_bound.epsilon, '.4f')} "
            f"at {number(estimate.lower_bound.confidence, '.4g')} confidence",
        )
        chart.point(
            estimate.epsilon.epsilon,
            y,
            css="slice-estimate",
            radius=6,
            tooltip=f"{row.label}: Epsilon* {number(estimate.epsilon.epsilon, '.4f')}",
        )
    intervals = any(row.estimate.epsilon and row.estimate.epsilon.interval for row in rows)
    _legend(chart, sliced, headline, bool(intervals))
    return chart.render()


def _legend(chart: Chart, sliced: SliceResult, headline: float, intervals: bool) -> None:
    """Legend entries (the chart's marks are added without labels, once per row)."""
    chart.legend("dot", "slice-estimate", "Epsilon* of the slice")
    if intervals:
        chart.legend("line", "slice-interval", "bootstrap interval")
    together = number(sliced.confidence * 100, ".4g")
    chart.legend("dot", "slice-bound", f"lower bound (all hold together at {together} %)")
    chart.legend("line", "headline-line", f"headline Epsilon* {number(headline, '.4f')}")
