"""How an audit summarises the sides too large to hold one loss per row.

A side of more than :data:`EXACT_ROWS` rows is summarised (when the audit's statistics
allow it, :mod:`epsstar.audit.engines.summaries`) by a
:class:`~epsstar.statistics.summaries.loss_summary.SummaryPlan`; :class:`SummaryPlans` holds
both sides' plans and the share of rows whose hashes the shared-row check keeps, and is
recorded in the provenance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from epsstar.plumbing.json_types import JsonObject
from epsstar.statistics.summaries.loss_sketch import BINS
from epsstar.statistics.summaries.loss_summary import SummaryPlan

__all__ = ["EXACT_ROWS", "HASH_SAMPLE", "SummaryPlans"]

#: Rows of a side above which it is summarised (when the audit's statistics allow it).
EXACT_ROWS: Final = 1 << 18
#: Row hashes kept for the shared-row check, about, of the larger side once summarised.
HASH_SAMPLE: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class SummaryPlans:
    """How each side is summarised (``None``: held whole) and the share of rows whose
    hashes the shared-row check keeps."""

    train: SummaryPlan | None
    population: SummaryPlan | None
    hash_rate: float

    @classmethod
    def for_rows(cls, n_train: int, n_population: int, *, seed: int) -> SummaryPlans | None:
        """The plans for sides of these sizes, or ``None`` when both are held whole."""
        if max(n_train, n_population) <= EXACT_ROWS:
            return None
        plans = SummaryPlan.for_rows(n_train, n_population, seed=seed)
        train, population = (
            plan if rows > EXACT_ROWS else None
            for plan, rows in zip(plans, (n_train, n_population), strict=True)
        )
        return cls(train, population, min(1.0, HASH_SAMPLE / max(n_train, n_population)))

    @property
    def bins(self) -> int:
        """The bins of the grid every summary counts its losses on."""
        return BINS

    def for_role(self, role: str) -> SummaryPlan | None:
        return self.train if role == "train" else self.population

    def to_dict(self) -> JsonObject:
        """The provenance record: per side, its tail values and sample rate (``None``: held
        whole), the grid's bins and the share of rows hashed for the shared-row check."""
        return {
            **{
                role: None
                if plan is None
                else {"tail_values": plan.k, "sample_rate": plan.sample_rate, "bins": BINS}
                for role, plan in (("train", self.train), ("population", self.population))
            },
            "row_hash_rate": self.hash_rate,
        }
