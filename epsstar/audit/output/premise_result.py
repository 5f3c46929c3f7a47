"""The blind baseline's record: Epsilon* of a classifier that never saw the model, and
whether the premise of the audit holds (:mod:`epsstar.audit.premise`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from epsstar.plumbing.json_types import JsonObject
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
class BlindBaseline:
    """Epsilon*, its held-out lower bound and the AUC of the blind classifier's scores, or
    why it did not run (``skipped``)."""

    epsilon: EpsilonStarResult | None
    lower_bound: EpsilonLowerBound | None
    auc: float | None
    classifier: str | None
    folds: int | None
    #: Rows per side (training, population) the classifiers were fitted on; every row is
    #: scored.
    fitted_rows: tuple[int, int] | None = None
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

    def to_dict(self) -> JsonObject:
        epsilon, bound = self.epsilon, self.lower_bound
        return {
            "epsilon_star": None if epsilon is None else epsilon.epsilon,
            "method": None if epsilon is None else epsilon.method,
            "lower_bound": None if bound is None else bound.epsilon,
            "confidence": None if bound is None else bound.confidence,
            "auc": self.auc,
            "classifier": self.classifier,
            "folds": self.folds,
            "fitted_rows": None
            if self.fitted_rows is None
            else {"train": self.fitted_rows[0], "population": self.fitted_rows[1]},
            "skipped": self.skipped,
            "tests": [test.to_dict() for test in self.tests],
        }
