"""The inline-SVG charts: tick labels stay inside the chart, lines are cut at the frame."""

from __future__ import annotations

import re

import pytest

from epsstar.reports.svg import TICK_CHARACTER_WIDTH, Chart


@pytest.mark.parametrize(("low", "high"), [(0.0, 100.0), (-1.0, 1.0), (-2e5, 2e5)])
def test_tick_labels_stay_inside_a_narrow_chart(low: float, high: float) -> None:
    """Ticks at both ends of the axis, whose labels would stick out of the chart if centred."""
    chart = Chart(
        "narrow",
        (low, high),
        (0.0, 1.0),
        "density",
        "",
        width=150,
        height=400,
        margin=(16, 2, 48, 2),
    )
    svg = chart.render()
    ticks = re.findall(
        r'<text class="tick" x="([\d.]+)" y="[\d.]+" text-anchor="(\w+)">([^<]+)<', svg
    )
    assert len(ticks) >= 2
    for x, anchor, label in ticks:
        width = len(label) * TICK_CHARACTER_WIDTH
        left = {"start": 0.0, "middle": width / 2, "end": width}[anchor]
        assert float(x) - left >= 0.0
        assert float(x) - left + width <= 150.0, label


def test_lines_leaving_the_plot_keep_their_direction() -> None:
    """A line is not bent along the frame where it leaves the plot: the clip path cuts it."""
    chart = Chart(
        "line", (0.0, 1.0), (0.0, 1.0), "", "", width=200, height=200, margin=(0, 0, 0, 0)
    )
    chart.line([-1.0, 0.5, 2.0], [-1.0, 0.5, 2.0], css="diagonal")
    points = re.search(r'points="([^"]+)"', chart.render())
    assert points is not None
    xy = [tuple(float(v) for v in p.split(",")) for p in points.group(1).split()]
    assert xy == [(-200.0, 400.0), (100.0, 100.0), (400.0, -200.0)]
    assert 'clip-path="url(#clip-line)"' in chart.render()
