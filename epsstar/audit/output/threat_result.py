"""The records of the threats an audit reads beyond the membership of one record: the most
exposed records (``--top-records``), user-level Epsilon* (``--group-by``) and attribute
inference (``--attribute``)."""

from __future__ import annotations

from dataclasses import dataclass

from epsstar.plumbing.json_types import JsonObject
from epsstar.statistics.bounds.from_counts import EpsilonLowerBound
from epsstar.statistics.readings.attribute import AttributeReading, AttributeSecurity
from epsstar.statistics.results import EpsilonStarResult

__all__ = ["AttributeInference", "ExposedRecords", "ExposedRow", "UserAggregate", "UserLevel"]


@dataclass(frozen=True, slots=True)
class ExposedRow:
    """A training record: its row in the training file (0 for the first data row), its
    score and the log-likelihood ratio of its score
    (:mod:`epsstar.statistics.readings.exposure`)."""

    row: int
    score: float
    log_likelihood_ratio: float


@dataclass(frozen=True, slots=True)
class ExposedRecords:
    """The training records with the strongest membership evidence under ``attack``'s
    scores, strongest first, or why none are listed (``unavailable``)."""

    attack: str
    rows: tuple[ExposedRow, ...]
    likelihood_from: str | None
    unavailable: str | None = None

    def to_dict(self) -> JsonObject:
        return {
            "attack": self.attack,
            "likelihood_ratio_from": self.likelihood_from,
            "records": [
                {"row": r.row, "score": r.score, "log_likelihood_ratio": r.log_likelihood_ratio}
                for r in self.rows
            ],
            "unavailable": self.unavailable,
        }


@dataclass(frozen=True, slots=True)
class UserAggregate:
    """Epsilon* over users of one aggregate of their records' scores."""

    aggregate: str
    epsilon: EpsilonStarResult
    lower_bound: EpsilonLowerBound
    auc: float

    def to_dict(self) -> JsonObject:
        return {
            "aggregate": self.aggregate,
            "epsilon_star": self.epsilon.epsilon,
            "method": self.epsilon.method,
            "lower_bound": self.lower_bound.epsilon,
            "auc": self.auc,
        }


@dataclass(frozen=True, slots=True)
class UserLevel:
    """User-level Epsilon* (``--group-by``): users per side, records per user, and one
    record per aggregate; ``attack`` is the attack whose scores were aggregated."""

    column: str
    attack: str
    users: tuple[int, int]
    records_per_user: tuple[int, float, int]
    aggregates: tuple[UserAggregate, ...]

    @property
    def strongest(self) -> UserAggregate:
        return max(self.aggregates, key=lambda a: (a.lower_bound.epsilon, a.epsilon.epsilon))

    def to_dict(self) -> JsonObject:
        fewest, median, most = self.records_per_user
        return {
            "column": self.column,
            "attack": self.attack,
            "member_users": self.users[0],
            "nonmember_users": self.users[1],
            "records_per_user": {"min": fewest, "median": median, "max": most},
            "aggregates": [a.to_dict() for a in self.aggregates],
        }


@dataclass(frozen=True, slots=True)
class AttributeInference:
    """The attribute attack of Yeom et al. on ``column`` (its ``values``), its reading, and
    the bound recorded by ``epsstar train --attribute`` (``None``: not recorded)."""

    column: str
    values: tuple[str, ...]
    reading: AttributeReading
    confidence: float
    bound: AttributeSecurity | None = None

    def to_dict(self) -> JsonObject:
        r = self.reading
        return {
            "column": self.column,
            "values": list(self.values),
            "accuracy_members": r.accuracy_members,
            "accuracy_nonmembers": r.accuracy_nonmembers,
            "members": r.members,
            "nonmembers": r.nonmembers,
            "advantage": r.advantage,
            "epsilon": r.epsilon,
            "lower_bound": r.lower_bound.epsilon,
            "confidence": self.confidence,
            "training_bound": None if self.bound is None else self.bound.to_dict(),
        }
