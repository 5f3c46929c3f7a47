"""The records of the threats an audit reads beyond the membership of one record: the most
exposed records (``--top-records``), user-level Epsilon* (``--group-by``) and attribute
inference (``--attribute``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.statistics.bounds.from_counts import EpsilonLowerBound
from epsstar.statistics.readings.attribute import AttributeReading, AttributeSecurity
from epsstar.statistics.results import EpsilonStarResult

__all__ = [
    "AttributeInference",
    "ExposedRecords",
    "ExposedRow",
    "RecordsPerUser",
    "UserAggregate",
    "UserLevel",
]


@dataclass(frozen=True, slots=True)
class ExposedRow(JsonRecord):
    """A training record: its row in the training file (0 for the first data row), its
    score and the log-likelihood ratio of its score
    (:mod:`epsstar.statistics.readings.exposure`)."""

    row: int
    score: float
    log_likelihood_ratio: float


@dataclass(frozen=True, slots=True)
class ExposedRecords(JsonRecord):
    """The training records with the strongest membership evidence under ``attack``'s
    scores, strongest first, or why none are listed (``unavailable``)."""

    attack: str
    rows: tuple[ExposedRow, ...] = field(metadata=json_rule(skip=True))
    likelihood_from: str | None = field(metadata=json_rule(name="likelihood_ratio_from"))
    unavailable: str | None = None

    @json_property(name="records", after="likelihood_from")
    def records(self) -> tuple[ExposedRow, ...]:
        """The rows, written after where their likelihood ratios came from."""
        return self.rows


@dataclass(frozen=True, slots=True)
class UserAggregate(JsonRecord):
    """Epsilon* over users of one aggregate of their records' scores."""

    aggregate: str
    epsilon: EpsilonStarResult = field(metadata=json_rule(skip=True))
    lower_bound: EpsilonLowerBound = field(metadata=json_rule(skip=True))
    auc: float

    @json_property(after="epsilon")
    def epsilon_star(self) -> float:
        return self.epsilon.epsilon

    @json_property(after="epsilon")
    def method(self) -> str:
        return self.epsilon.method

    @json_property(name="lower_bound", after="lower_bound")
    def epsilon_lower_bound(self) -> float:
        return self.lower_bound.epsilon


@dataclass(frozen=True, slots=True)
class RecordsPerUser(JsonRecord):
    """The fewest, the median and the most records a user has."""

    min: int
    median: float
    max: int


@dataclass(frozen=True, slots=True)
class UserLevel(JsonRecord):
    """User-level Epsilon* (``--group-by``): users per side, records per user, and one
    record per aggregate; ``attack`` is the attack whose scores were aggregated."""

    column: str
    attack: str
    users: tuple[int, int] = field(metadata=json_rule(skip=True))
    records_per_user: tuple[int, float, int] = field(metadata=json_rule(skip=True))
    aggregates: tuple[UserAggregate, ...]

    @json_property(after="users")
    def member_users(self) -> int:
        return self.users[0]

    @json_property(after="users")
    def nonmember_users(self) -> int:
        return self.users[1]

    @json_property(name="records_per_user", after="records_per_user")
    def records_per_user_spread(self) -> RecordsPerUser:
        return RecordsPerUser(*self.records_per_user)

    @property
    def strongest(self) -> UserAggregate:
        return max(self.aggregates, key=lambda a: (a.lower_bound.epsilon, a.epsilon.epsilon))


@dataclass(frozen=True, slots=True)
class AttributeInference(JsonRecord):
    """The attribute attack of Yeom et al. on ``column`` (its ``values``), its reading, and
    the bound recorded by ``epsstar train --attribute`` (``None``: not recorded)."""

    column: str
    values: tuple[str, ...]
    reading: AttributeReading = field(metadata=json_rule(skip=True))
    confidence: float
    bound: AttributeSecurity | None = field(default=None, metadata=json_rule(name="training_bound"))

    @json_property(after="reading")
    def accuracy_members(self) -> float:
        return self.reading.accuracy_members

    @json_property(after="reading")
    def accuracy_nonmembers(self) -> float:
        return self.reading.accuracy_nonmembers

    @json_property(after="reading")
    def members(self) -> int:
        return self.reading.members

    @json_property(after="reading")
    def nonmembers(self) -> int:
        return self.reading.nonmembers

    @json_property(after="reading")
    def advantage(self) -> float:
        return self.reading.advantage

    @json_property(after="reading")
    def epsilon(self) -> float:
        return self.reading.epsilon

    @json_property(after="reading")
    def lower_bound(self) -> float:
        return self.reading.lower_bound.epsilon
