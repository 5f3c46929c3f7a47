"""Numbers as the reports print them: plain numbers, percentages, counts and rates.

Exponents stay lower case (``2.96e-06``). A rate close to 1 is printed as
``1 − gap`` whenever its plain form would misstate the gap to 1 (``0.999997`` is
``1 − 2.96e-06``, never ``1``), as the trade-off chart's axes do.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["count", "counted", "number", "percent", "rate"]

#: Largest relative error of the gap to 1 that a rate's plain form may show.
RATE_GAP_TOLERANCE = 0.05


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def number(value: Any, spec: str = ".4g") -> str:
    """A number for humans; ``—`` when missing or not finite; lists joined."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(number(v, spec) for v in value) + "]"
    if value is None or isinstance(value, bool):
        return "—" if value is None else str(value)
    if not isinstance(value, (int, float)):
        return str(value)
    if not math.isfinite(value):
        return "∞" if value > 0 else ("−∞" if value < 0 else "—")
    return format(value, spec)


def percent(value: Any, digits: int = 1) -> str:
    if not _finite(value):
        return "—"
    return f"{100.0 * value:.{digits}f} %"


def count(value: Any) -> str:
    if value is None:
        return "—"
    return f"{int(value):,}"


def counted(value: Any, noun: str, plural: str | None = None) -> str:
    """A count with its noun in agreement: ``1 false positive``, ``8,141 false positives``.

    ``plural`` when adding an ``s`` is wrong (``1 strategy``, ``2 strategies``).
    """
    if value is None:
        return f"— {plural or noun + 's'}"
    return f"{int(value):,} {noun if int(value) == 1 else plural or noun + 's'}"


def rate(value: Any, digits: int = 4) -> str:
    """A rate in [0, 1] with ``digits`` significant digits, or ``1 − gap`` near 1.

    ``1 − gap`` (gap to 3 significant digits) is used when the plain form's
    distance to 1 is off by more than :data:`RATE_GAP_TOLERANCE` of the true gap.
    """
    if not _finite(value):
        return "—"
    plain = format(value, f".{digits}g")
    gap = 1.0 - float(value)
    if value <= 0.5 or gap <= 0.0:
        return plain
    if abs((1.0 - float(plain)) - gap) <= RATE_GAP_TOLERANCE * gap:
        return plain
    return f"1 − {gap:.3g}"
