"""Small inline-SVG charts, drawn in Python so that reports need no JavaScript.

A :class:`Chart` maps data coordinates to pixels on linear or log10 axes and
collects SVG elements; :meth:`Chart.render` returns markup-safe SVG text. Every
piece of text that goes into the SVG is escaped here, so charts can be placed
in autoescaping templates as they are.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from markupsafe import Markup, escape
from numpy.typing import ArrayLike

__all__ = ["Anchor", "Chart", "log_ticks", "logit_ticks", "nice_ticks"]

#: Width in pixels of one legend column under a chart (a 960-pixel chart has three).
LEGEND_COLUMN_WIDTH = 300
#: Pixels of axis per tick on linear axes, and the approximate width of a tick label's character.
TICK_SPACING = 55
TICK_CHARACTER_WIDTH = 6.5
#: Lines are drawn up to this many plot sizes beyond the frame (the clip path hides the rest).
OVERSHOOT = 4.0

Scale = Literal["linear", "log", "logit"]
Anchor = Literal["start", "middle", "end"]


def nice_ticks(low: float, high: float, count: int = 6) -> list[float]:
    """About ``count`` round numbers (1, 2, 2.5 or 5 times a power of ten) in [low, high]."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low]
    raw = (high - low) / max(count - 1, 1)
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * power >= raw)
    first = math.ceil(low / step - 1e-9) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(0.0 if abs(value) < step * 1e-9 else value)
        value += step
    return ticks


def log_ticks(low: float, high: float, most: int = 7) -> list[float]:
    """Powers of ten in [low, high], thinned to at most ``most`` ticks."""
    first, last = math.ceil(math.log10(low) - 1e-9), math.floor(math.log10(high) + 1e-9)
    exponents = list(range(first, last + 1))
    stride = max(1, math.ceil(len(exponents) / most))
    return [10.0**e for e in exponents[::-1][::stride][::-1]]


def logit_ticks(low: float, high: float, most: int = 11) -> list[float]:
    """Rates for a log-odds axis: powers of ten near 0, 0.5, and one minus them near 1."""
    lower = [10.0**e for e in range(math.ceil(math.log10(low) - 1e-9), 0)]
    upper = [1.0 - 10.0**e for e in range(-1, math.floor(math.log10(1.0 - high) - 1e-9) - 1, -1)]
    stride = max(1, math.ceil(len(lower) / max(1, (most - 1) // 2)))
    lower = lower[::-1][::stride][::-1]
    upper = upper[::stride]
    return [v for v in [*lower, 0.5, *upper] if low <= v <= high]


def format_tick(value: float, scale: Scale) -> str:
    if scale == "logit" and value > 0.5:
        gap = 1.0 - value
        exponent = round(math.log10(gap))
        return f"{1 - 10.0**exponent:g}" if exponent >= -3 else f"1−1e{exponent}"
    if scale == "logit" and value == 0.5:
        return "0.5"
    if scale in ("log", "logit"):
        exponent = round(math.log10(value))
        if -2 <= exponent <= 0:
            return f"{value:g}"
        return f"1e{exponent}"
    if value == 0:
        return "0"
    if abs(value) >= 1e4 or abs(value) < 1e-3:
        return f"{value:.0e}"
    return f"{value:g}"


def _logit(value: float) -> float:
    v = min(max(value, 1e-300), 1.0 - 1e-16)
    return math.log(v) - math.log1p(-v)


def _number(value: float) -> str:
    return f"{value:.1f}"


@dataclass
class Chart:
    """One plot area with axes; add elements in data coordinates, then :meth:`render`."""

    title: str
    x_range: tuple[float, float]
    y_range: tuple[float, float]
    x_label: str
    y_label: str
    x_scale: Scale = "linear"
    y_scale: Scale = "linear"
    width: int = 640
    height: int = 360
    margin: tuple[int, int, int, int] = (16, 20, 48, 64)  # top, right, bottom, left
    css_class: str = "chart"
    tick_labels: tuple[bool, bool] = (True, True)  # x, y
    _body: list[str] = field(default_factory=list)
    _legend: list[tuple[str, str, str]] = field(default_factory=list)

    # --- coordinates -------------------------------------------------------------------------

    def _unit(self, value: float, bounds: tuple[float, float], scale: Scale) -> float:
        low, high = bounds
        if scale == "log":
            value, low, high = (math.log10(max(v, 1e-300)) for v in (value, low, high))
        elif scale == "logit":
            value, low, high = (_logit(v) for v in (value, low, high))
        return (value - low) / (high - low) if high != low else 0.5

    @property
    def plot_box(self) -> tuple[float, float, float, float]:
        """(left, top, right, bottom) of the plot area in pixels."""
        top, right, bottom, left = self.margin
        return left, top, self.width - right, self.height - bottom

    def px(self, x: float) -> float:
        left, _, right, _ = self.plot_box
        return left + self._unit(x, self.x_range, self.x_scale) * (right - left)

    def py(self, y: float) -> float:
        _, top, _, bottom = self.plot_box
        return bottom - self._unit(y, self.y_range, self.y_scale) * (bottom - top)

    def _visible(self, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
        ok: np.ndarray = np.isfinite(xs) & np.isfinite(ys)
        if self.x_scale != "linear":
            ok &= xs > 0
        if self.y_scale != "linear":
            ok &= ys > 0
        if self.x_scale == "logit":
            ok &= xs < 1
        if self.y_scale == "logit":
            ok &= ys < 1
        return ok

    def _clip(self, xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Clamp points to the axis ranges (for shaded regions)."""
        return (
            np.clip(xs, min(self.x_range), max(self.x_range)),
            np.clip(ys, min(self.y_range), max(self.y_range)),
        )

    def _pixels(self, x: float, y: float) -> tuple[float, float]:
        """Pixel position of a line's point, kept within a few plot sizes of the frame.

        Points beyond the axes are not moved onto the frame (that would bend the
        line along it): the clip path cuts the line where it leaves the plot.
        """
        left, top, right, bottom = self.plot_box
        w, h = (right - left) * OVERSHOOT, (bottom - top) * OVERSHOOT
        px = min(max(self.px(x), left - w), right + w)
        py = min(max(self.py(y), top - h), bottom + h)
        return px, py

    # --- elements ------------------------------------------------------------------------------

    def line(
        self,
        xs: Iterable[float],
        ys: Iterable[float],
        *,
        css: str,
        label: str | None = None,
        tooltip: str | None = None,
    ) -> None:
        """A polyline through the finite, positive-on-log-axes points."""
        x = np.asarray(list(xs) if not isinstance(xs, np.ndarray) else xs, dtype=np.float64)
        y = np.asarray(list(ys) if not isinstance(ys, np.ndarray) else ys, dtype=np.float64)
        keep = self._visible(x, y)
        x, y = x[keep], y[keep]
        if x.size < 2:
            return
        points = " ".join(
            ",".join(_number(v) for v in self._pixels(float(a), float(b)))
            for a, b in zip(x, y, strict=True)
        )
        title = f"<title>{escape(tooltip)}</title>" if tooltip else ""
        self._body.append(
            f'<polyline class="{escape(css)}" fill="none" points="{points}">{title}</polyline>'
        )
        if label:
            self._legend.append(("line", css, label))

    def bars(self, edges: ArrayLike, heights: ArrayLike, *, css: str, label: str | None) -> None:
        """A histogram as one outline path (steps) with a translucent fill."""
        edges = np.asarray(edges, dtype=np.float64)
        heights = np.asarray(heights, dtype=np.float64)
        _, _, _, bottom = self.plot_box
        base = _number(min(bottom, self.py(max(self.y_range[0], 0.0))))
        commands = [f"M{_number(self.px(edges[0]))},{base}"]
        for left, right, height in zip(edges[:-1], edges[1:], heights, strict=True):
            top = _number(self.py(min(float(height), self.y_range[1])))
            commands.append(f"L{_number(self.px(left))},{top}L{_number(self.px(right))},{top}")
        commands.append(f"L{_number(self.px(edges[-1]))},{base}Z")
        self._body.append(f'<path class="{escape(css)}" d="{"".join(commands)}"/>')
        if label:
            self._legend.append(("box", css, label))

    def region(
        self,
        x: tuple[float, float],
        y: tuple[float, float],
        *,
        css: str,
        label: str | None = None,
        tooltip: str | None = None,
    ) -> None:
        """A shaded rectangle in data coordinates (clamped to the plot)."""
        (x0, x1), (y0, y1) = self._clip(np.array(x), np.array(y))
        left, right = sorted((self.px(float(x0)), self.px(float(x1))))
        top, bottom = sorted((self.py(float(y0)), self.py(float(y1))))
        if right - left <= 0 or bottom - top <= 0:
            return
        title = f"<title>{escape(tooltip)}</title>" if tooltip else ""
        self._body.append(
            f'<rect class="{escape(css)}" x="{_number(left)}" y="{_number(top)}" '
            f'width="{_number(right - left)}" height="{_number(bottom - top)}">{title}</rect>'
        )
        if label:
            self._legend.append(("box", css, label))

    def point(
        self,
        x: float,
        y: float,
        *,
        css: str,
        radius: float = 5.0,
        label: str | None = None,
        tooltip: str | None = None,
        href: str | None = None,
        attrs: str = "",
    ) -> None:
        """A marker, optionally a link and with a hover title (SVG ``<title>``, no JS)."""
        if not self._visible(np.array([x]), np.array([y]))[0]:
            return
        title = f"<title>{escape(tooltip)}</title>" if tooltip else ""
        circle = (
            f'<circle class="{escape(css)}" cx="{_number(self.px(x))}" cy="{_number(self.py(y))}" '
            f'r="{radius:g}"{attrs}>{title}</circle>'
        )
        if href is not None:
            circle = f'<a href="{escape(href)}">{circle}</a>'
        self._body.append(circle)
        if label:
            self._legend.append(("dot", css, label))

    def segment(self, x0: float, y0: float, x1: float, y1: float, *, css: str) -> None:
        self._body.append(
            f'<line class="{escape(css)}" x1="{_number(self.px(x0))}" y1="{_number(self.py(y0))}" '
            f'x2="{_number(self.px(x1))}" y2="{_number(self.py(y1))}"/>'
        )

    def text(
        self,
        x: float,
        y: float,
        value: str,
        *,
        css: str = "note",
        dx: float = 6,
        dy: float = -6,
        anchor: Anchor = "start",
    ) -> None:
        """Text at a data point, shifted by (``dx``, ``dy``) pixels."""
        self._body.append(
            f'<text class="{escape(css)}" x="{_number(self.px(x) + dx)}" '
            f'y="{_number(self.py(y) + dy)}" text-anchor="{anchor}" '
            f'dominant-baseline="middle">{escape(value)}</text>'
        )

    def legend(self, kind: Literal["line", "dot", "box"], css: str, label: str) -> None:
        """A legend entry of its own (for elements drawn without a label)."""
        self._legend.append((kind, css, label))

    def raw(self, markup: str) -> None:
        """Already-escaped SVG (pixel coordinates)."""
        self._body.append(markup)

    # --- output --------------------------------------------------------------------------------

    def _ticks(self, bounds: tuple[float, float], scale: Scale, length: float) -> list[float]:
        """Ticks of an axis ``length`` pixels long (linear axes: one per TICK_SPACING pixels)."""
        low, high = min(bounds), max(bounds)
        if scale == "logit":
            return logit_ticks(low, high)
        if scale == "log":
            return log_ticks(low, high)
        ticks = [low]
        for count in range(max(3, min(8, int(length // TICK_SPACING))), 12):
            ticks = nice_ticks(low, high, count=count)
            if len(ticks) >= 2:  # a short axis still gets two ticks
                break
        return ticks

    def _tick_x(self, x: float, label: str) -> tuple[float, str]:
        """Where a centred x tick label goes, moved (and anchored) to stay inside the chart."""
        half = len(label) * TICK_CHARACTER_WIDTH / 2
        if x + half > self.width - 1:
            return self.width - 1.0, "end"
        if x - half < 1:
            return 1.0, "start"
        return x, "middle"

    def _axes(self) -> list[str]:
        left, top, right, bottom = self.plot_box
        parts = [
            f'<rect class="frame" x="{left}" y="{top}" width="{right - left}" '
            f'height="{bottom - top}"/>'
        ]
        for tick in self._ticks(self.x_range, self.x_scale, right - left):
            x = _number(self.px(tick))
            parts.append(f'<line class="grid" x1="{x}" y1="{top}" x2="{x}" y2="{bottom}"/>')
            if self.tick_labels[0]:
                label = format_tick(tick, self.x_scale)
                at, anchor = self._tick_x(self.px(tick), label)
                parts.append(
                    f'<text class="tick" x="{_number(at)}" y="{bottom + 16}" '
                    f'text-anchor="{anchor}">{escape(label)}</text>'
                )
        for tick in self._ticks(self.y_range, self.y_scale, bottom - top):
            y = _number(self.py(tick))
            parts.append(f'<line class="grid" x1="{left}" y1="{y}" x2="{right}" y2="{y}"/>')
            if self.tick_labels[1]:
                parts.append(
                    f'<text class="tick" x="{left - 6}" y="{y}" text-anchor="end" '
                    f'dominant-baseline="middle">{escape(format_tick(tick, self.y_scale))}</text>'
                )
        parts.append(
            f'<text class="axis-label" x="{(left + right) / 2:.1f}" y="{self.height - 8}" '
            f'text-anchor="middle">{escape(self.x_label)}</text>'
        )
        parts.append(
            f'<text class="axis-label" transform="rotate(-90)" x="{-(top + bottom) / 2:.1f}" '
            f'y="16" text-anchor="middle">{escape(self.y_label)}</text>'
        )
        return parts

    @property
    def _legend_columns(self) -> int:
        return max(1, self.width // LEGEND_COLUMN_WIDTH)

    def _legend_rows(self) -> int:
        return math.ceil(len(self._legend) / self._legend_columns)

    def _legend_markup(self) -> list[str]:
        """The legend in columns under the plot (it never hides data)."""
        if not self._legend:
            return []
        rows = []
        left = 8.0
        columns = self._legend_columns
        column_width = (self.width - 16) / columns
        for index, (kind, css, label) in enumerate(self._legend):
            x0 = left + column_width * (index % columns)
            y = self.height + 14 + 18 * (index // columns)
            if kind == "line":
                mark = (
                    f'<line class="{escape(css)}" x1="{x0:.1f}" y1="{y}" x2="{x0 + 22:.1f}" '
                    f'y2="{y}"/>'
                )
            elif kind == "dot":
                mark = f'<circle class="{escape(css)}" cx="{x0 + 11:.1f}" cy="{y}" r="4.5"/>'
            else:
                mark = (
                    f'<rect class="{escape(css)}" x="{x0 + 3:.1f}" y="{y - 6}" width="16" '
                    'height="12"/>'
                )
            rows.append(
                f'{mark}<text class="legend-text" x="{x0 + 28:.1f}" y="{y}" '
                f'dominant-baseline="middle">{escape(label)}</text>'
            )
        return rows

    def render(self, *, legend: bool = True) -> Markup:
        left, top, right, bottom = self.plot_box
        total_height = self.height + (8 + 18 * self._legend_rows() if legend else 0)
        clip_id = "clip-" + (re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-") or "chart")
        parts = [
            f'<svg class="{escape(self.css_class)}" viewBox="0 0 {self.width} {total_height}" '
            f'width="{self.width}" height="{total_height}" role="img" '
            f'aria-label="{escape(self.title)}">',
            f"<title>{escape(self.title)}</title>",
            f'<defs><clipPath id="{clip_id}"><rect x="{left}" y="{top}" '
            f'width="{right - left}" height="{bottom - top}"/></clipPath></defs>',
            *self._axes(),
            f'<g clip-path="url(#{clip_id})">',
            *self._body,
            "</g>",
            *(self._legend_markup() if legend else []),
            "</svg>",
        ]
        return Markup("\n".join(parts))
