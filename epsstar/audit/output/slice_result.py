"""The frozen record of an audit's slices: Epsilon* per value of one column.

Built by :func:`epsstar.audit.attacks.slices.audit_slices`; the statistics of each slice are
:class:`epsstar.statistics.estimators.slices.SliceEstimate`. ``to_dict()`` is the JSON block
``slices`` of an audit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.statistics.estimators.slices import SliceEstimate
from epsstar.statistics.names import AttackName
from epsstar.statistics.results import BootstrapInterval

__all__ = ["MISSING", "SliceResult", "SliceRow"]

#: How the slice of records without a value is shown (its JSON ``value`` is ``null``, so a
#: text value spelled the same stays a slice of its own).
MISSING: Final[str] = "(missing)"


@dataclass(frozen=True, slots=True)
class SliceRow(JsonRecord):
    """One slice: the column's value (as text; ``None`` for the records without one) and
    its estimates."""

    value: str | None
    estimate: SliceEstimate = field(metadata=json_rule(skip=True))

    @json_property()
    def n_members(self) -> int:
        return self.estimate.n_members

    @json_property()
    def n_nonmembers(self) -> int:
        return self.estimate.n_nonmembers

    @json_property()
    def epsilon_star(self) -> float | None:
        return None if self.estimate.epsilon is None else self.estimate.epsilon.epsilon

    @json_property()
    def method(self) -> str | None:
        return None if self.estimate.epsilon is None else self.estimate.epsilon.method

    @json_property()
    def epsilon_star_interval(self) -> BootstrapInterval | None:
        return None if self.estimate.epsilon is None else self.estimate.epsilon.interval

    @json_property()
    def tail_extrapolated(self) -> bool | None:
        estimate = self.estimate.epsilon
        return None if estimate is None else estimate.tail_extrapolated

    @json_property()
    def leak_p_value(self) -> float | None:
        return None if self.estimate.epsilon is None else self.estimate.epsilon.leak_p_value

    @json_property()
    def empirical_epsilon_star(self) -> float | None:
        return None if self.estimate.empirical is None else self.estimate.empirical.epsilon

    @json_property()
    def epsilon_lower_bound(self) -> float | None:
        bound = self.estimate.lower_bound
        return None if bound is None else bound.epsilon

    @json_property()
    def unavailable(self) -> str | None:
        return self.estimate.unavailable

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


@dataclass(frozen=True, slots=True)
class SliceResult(JsonRecord):
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
    minimum: int = field(metadata=json_rule(name="min_records"))
    rows: tuple[SliceRow, ...] = field(metadata=json_rule(name="slices"))

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
