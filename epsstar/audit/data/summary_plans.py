"""How an audit summarises the sides too large to hold one loss per row.

A side of more than :data:`EXACT_ROWS` rows is summarised (when the audit's statistics
allow it, :mod:`epsstar.audit.engines.summaries`) by a
:class:`~epsstar.statistics.summaries.loss_summary.SummaryPlan`; :class:`SummaryPlans` holds
both sides' plans and the share of rows whose hashes the shared-row check keeps, and is
recorded in the provenance.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.statistics.summaries.loss_sketch import BINS
from epsstar.statistics.summaries.loss_summary import SummaryPlan

__all__ = ["EXACT_ROWS", "HASH_SAMPLE", "SideSummary", "SummaryPlans"]

#: Rows of a side above which it is summarised (when the audit's statistics allow it).
EXACT_ROWS: Final = 1 << 18
#: Row hashes kept for the shared-row check, about, of the larger side once summarised.
HASH_SAMPLE: Final = 1 << 20


@dataclass(frozen=True, slots=True)
class SideSummary(JsonRecord):
    """How the provenance records one summarised side: the extremes its sketches keep
    (``tail_values``), the share of its records sampled and the bins of the loss grid."""

    tail_values: int
    sample_rate: float
    bins: int

    @classmethod
    def of(cls, plan: SummaryPlan | None) -> SideSummary | None:
        return None if plan is None else cls(plan.k, plan.sample_rate, BINS)


@dataclass(frozen=True, slots=True)
class SummaryPlans(JsonRecord):
    """How each side is summarised (``None``: held whole) and the share of rows whose
    hashes the shared-row check keeps; its JSON is the provenance's ``summaries``."""

    train: SummaryPlan | None = field(metadata=json_rule(skip=True))
    population: SummaryPlan | None = field(metadata=json_rule(skip=True))
    hash_rate: float = field(metadata=json_rule(name="row_hash_rate"))

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

    @json_property(name="train", after="train")
    def train_summary(self) -> SideSummary | None:
        """The training side's summary (``None``: held whole)."""
        return SideSummary.of(self.train)

    @json_property(name="population", after="population")
    def population_summary(self) -> SideSummary | None:
        """The population side's summary (``None``: held whole)."""
        return SideSummary.of(self.population)
