"""The blind baseline's record: Epsilon* of a classifier that never saw the model, and
whether the premise of the audit holds (:mod:`epsstar.audit.premise`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from epsstar.plumbing.records.by_side import BySide
from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.statistics.bounds.from_counts import EpsilonLowerBound
from epsstar.statistics.bounds.premise_tests import PremiseTest
from epsstar.statistics.results import EpsilonStarResult

__all__ = ["PREMISE_WARNING", "BlindBaseline"]

#: What the summary, the report and the gate say when the premise fails.
PREMISE_WARNING: Final = (
    "train and population differ without the model: Epsilon* measures that difference, "
    "not only memorisation"
)


@dataclass(frozen=True, slots=True)
class BlindBaseline(JsonRecord):
    """Epsilon*, its held-out lower bound and the AUC of the blind classifier's scores, or
    why it did not run (``skipped``)."""

    epsilon: EpsilonStarResult | None = field(metadata=json_rule(skip=True))
    lower_bound: EpsilonLowerBound | None = field(metadata=json_rule(skip=True))
    auc: float | None
    classifier: str | None
    folds: int | None
    #: Rows per side (training, population) the classifiers were fitted on; every row is
    #: scored.
    fitted_rows: tuple[int, int] | None = field(default=None, metadata=json_rule(skip=True))
    skipped: str | None = None
    #: The tests of the premise, combined by Bonferroni
    #: (:mod:`epsstar.statistics.bounds.premise_tests`); empty: the lower bound alone.
    tests: tuple[PremiseTest, ...] = ()

    @classmethod
    def skipped_because(cls, reason: str) -> BlindBaseline:
        return cls(None, None, None, None, None, None, reason)

    @property
    def premise_holds(self) -> bool | None:
        """False when a test of the premise flags the tables (the records alone tell them
        apart at the audit's confidence); without tests, when the blind lower bound is
        above 0; None when the baseline did not run."""
        if self.lower_bound is None:
            return None
        if self.tests:
            return not any(test.flagged for test in self.tests)
        return not self.lower_bound.epsilon > 0

    @json_property(after="epsilon")
    def epsilon_star(self) -> float | None:
        return None if self.epsilon is None else self.epsilon.epsilon

    @json_property(after="epsilon")
    def method(self) -> str | None:
        return None if self.epsilon is None else self.epsilon.method

    @json_property(name="lower_bound", after="lower_bound")
    def epsilon_lower_bound(self) -> float | None:
        return None if self.lower_bound is None else self.lower_bound.epsilon

    @json_property(after="lower_bound")
    def confidence(self) -> float | None:
        return None if self.lower_bound is None else self.lower_bound.confidence

    @json_property(name="fitted_rows", after="fitted_rows")
    def fitted_rows_by_side(self) -> BySide[int] | None:
        return None if self.fitted_rows is None else BySide(*self.fitted_rows)
