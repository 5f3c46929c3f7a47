"""Plain-text tables for the terminal and for benchmark output."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.statistics.results import EpsilonStarResult
    from epsstar.statistics.simulation import Cell

__all__ = ["aligned_table", "format_table"]


def aligned_table(rows: Sequence[Sequence[str]], *, left_columns: int = 0) -> str:
    """``rows`` (the first is the header) as aligned columns with a rule under the header.

    The first ``left_columns`` columns are left-aligned (labels), the others right-aligned
    (numbers); columns are separated by two spaces.
    """
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            value.ljust(width) if i < left_columns else value.rjust(width)
            for i, (value, width) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def format_table(cells: list[Cell]) -> str:
    """A plain-text table: truth and mean ± sd of each estimator per cell."""
    if not cells:
        return ""
    names = list(cells[0].estimates)
    header = ["d", "n", "delta", "true eps*", *names]
    rows = [header]
    for cell in cells:
        rows.append(
            [
                f"{cell.d:g}",
                f"{cell.n:,}",
                f"{cell.delta:g}",
                f"{cell.truth:.3f}",
                *(f"{cell.mean(name):.3f} ± {cell.sd(name):.3f}" for name in names),
            ]
        )
    return aligned_table(rows)


def rate_text(rate: float, digits: int = 4) -> str:
    """A rate in [0, 1] with its distance from 1 shown when it is near 1 (``1 - 2.96e-06``).

    Printed plainly such a rate would round to ``1`` and hide the tail it lies in.
    """
    if 0.999 < rate < 1.0:
        return f"1 - {1.0 - rate:.{digits - 1}g}"
    return f"{rate:.{digits}g}"


def extrapolation_note(rates: tuple[str, ...]) -> str:
    """The note line for a maximising test whose ``rates`` no record of data holds."""
    verb = "is" if len(rates) == 1 else "are"
    return (
        f"  note: the maximising test's {' and '.join(rates)} {verb} below one record's worth "
        "of data (extrapolated tail)"
    )


def interval_lines(result: EpsilonStarResult) -> list[str]:
    """The bootstrap interval line, when the result has one, with what it does not cover."""
    interval = result.interval
    if interval is None:
        return []
    caveat = (
        "sampling spread and tail-size choice, not the shape of the extrapolated tail"
        if result.tail_extrapolated
        else "sampling spread, not a calibrated bound"
    )
    return [
        f"  {interval.level:.0%} bootstrap interval ({interval.kind}, "
        f"{interval.n_bootstrap} resamples): [{interval.low:.4f}, {interval.high:.4f}]"
        f" - {caveat}"
    ]
