"""The frozen record of an audit's slices: Epsilon* per value of one column.

Built by :func:`epsstar.audit.attacks.slices.audit_slices`; the statistics of each slice are
:class:`epsstar.statistics.estimators.slices.SliceEstimate`. ``to_dict()`` is the JSON block
``slices`` of an audit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from epsstar.plumbing.json_types import JsonObject
from epsstar.statistics.estimators.slices import SliceEstimate
from epsstar.statistics.names import AttackName

__all__ = ["MISSING", "SliceResult", "SliceRow"]

#: How the slice of records without a value is shown (its JSON ``value`` is ``null``, so a
#: text value spelled the same stays a slice of its own).
MISSING: Final[str] = "(missing)"


@dataclass(frozen=True, slots=True)
class SliceRow:
    """One slice: the column's value (as text; ``None`` for the records without one) and
    its estimates."""

    value: str | None
    estimate: SliceEstimate

    @property
    def label(self) -> str:
        """The value for display: :data:`MISSING` for the records without one, and a text
        value spelled like it in quotes, so that the two stay apart on the page."""
        if self.value is None:
            return MISSING
        return f'"{self.value}"' if self.value == MISSING else self.value

    def shown(self, width: int = 40) -> str:
        """The label cut to ``width`` characters (an ellipsis marks the cut), for display."""
        value = self.label
        return value if len(value) <= width else value[: width - 1] + "…"

    def to_dict(self) -> JsonObject:
        estimate = self.estimate
        headline = None if estimate.epsilon is None else estimate.epsilon.to_dict()
        return {
            "value": self.value,
            "n_members": estimate.n_members,
            "n_nonmembers": estimate.n_nonmembers,
            "epsilon_star": None if estimate.epsilon is None else estimate.epsilon.epsilon,
            "method": None if headline is None else headline["method"],
            "epsilon_star_interval": None
            if headline is None
            else headline["epsilon_star_interval"],
            "tail_extrapolated": None if headline is None else headline["tail_extrapolated"],
            "leak_p_value": None if headline is None else headline["leak_p_value"],
            "empirical_epsilon_star": None
            if estimate.empirical is None
            else estimate.empirical.epsilon,
            "epsilon_lower_bound": None
            if estimate.lower_bound is None
            else estimate.lower_bound.epsilon,
            "unavailable": estimate.unavailable,
        }


@dataclass(frozen=True, slots=True)
class SliceResult:
    """Epsilon* within each slice of ``column``, for the scores of ``attack``.

    Every slice is estimated with the audit's method at the audit's ``delta``;
    ``confidence`` is that of the whole table of lower bounds and ``confidence_each``
    that of each slice's (Bonferroni over the slices estimated). Slices with fewer than
    ``minimum`` records on either side are listed without estimates.
    """

    column: str
    attack: AttackName
    delta: float
    method: str
    confidence: float
    confidence_each: float
    minimum: int
    rows: tuple[SliceRow, ...]

    @property
    def estimated(self) -> tuple[SliceRow, ...]:
        """The slices that hold an estimate."""
        return tuple(row for row in self.rows if row.estimate.epsilon is not None)

    @property
    def too_small(self) -> tuple[SliceRow, ...]:
        """The slices with fewer than ``minimum`` records on a side (never estimated)."""
        return tuple(
            row
            for row in self.rows
            if min(row.estimate.n_members, row.estimate.n_nonmembers) < self.minimum
        )

    def to_dict(self) -> JsonObject:
        return {
            "column": self.column,
            "attack": self.attack,
            "delta": self.delta,
            "method": self.method,
            "confidence": self.confidence,
            "confidence_each": self.confidence_each,
            "min_records": self.minimum,
            "slices": [row.to_dict() for row in self.rows],
        }
