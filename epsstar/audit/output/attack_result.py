"""The frozen record of one membership test's audit: Epsilon* and the test's power.

Every attack (:data:`epsstar.statistics.names.ATTACKS`) gives one score per record,
oriented like a loss; its record holds what the loss attack's audit holds for the loss
(the headline Epsilon* with its interval, the empirical Epsilon*, the held-out lower
bound, the gate's statistic, the TPR at 0.1 % and 1 % FPR) and the test's AUC. An
attack whose scores are all equal is *uninformative*: its record says why, and its figures
are those of a test with ``FPR = 1 - FNR`` (Epsilon* and the lower bound 0, AUC 0.5).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.plumbing.records.json_types import JsonObject
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.bounds.from_counts import EpsilonLowerBound
from epsstar.statistics.bounds.gate import GateStatistic
from epsstar.statistics.estimators.delta_profile import DeltaPoint
from epsstar.statistics.names import ATTACKS, AttackName
from epsstar.statistics.readings.readings import Readings, TprReading
from epsstar.statistics.results import BootstrapInterval, EpsilonStarResult

__all__ = ["AttackResult"]

_SKIP = json_rule(skip=True)


@dataclass(frozen=True, slots=True)
class AttackResult(JsonRecord):
    """One attack's audit on ``n_members`` training and ``n_nonmembers`` population records.

    ``settings`` records how the scores were made (reference models, the OUT variance of
    LiRA, RMIA's ``a`` and ``γ`` and its split of the population into scored records and
    ``z`` records). ``member_scores`` and ``nonmember_scores`` are the scores themselves.
    """

    name: AttackName = field(metadata=json_rule(name="attack"))
    epsilon: EpsilonStarResult = field(metadata=_SKIP)
    empirical: EpsilonStarResult = field(metadata=_SKIP)
    lower_bound: EpsilonLowerBound
    gate: GateStatistic | None
    readings: Readings = field(metadata=_SKIP)
    auc: float
    settings: JsonObject
    member_scores: FloatArray = field(
        default_factory=lambda: np.empty(0), repr=False, metadata=_SKIP
    )
    nonmember_scores: FloatArray = field(
        default_factory=lambda: np.empty(0), repr=False, metadata=_SKIP
    )
    #: Epsilon* from δ = 10/n down to the audit's δ, as for the loss attack.
    delta_profile: tuple[DeltaPoint, ...] = field(default=(), metadata=_SKIP)
    #: The population rows that ``nonmember_scores`` score, in order (``None``: every
    #: row; RMIA sets its ``z`` records aside).
    nonmember_rows: NDArray[np.int64] | None = field(default=None, repr=False, metadata=_SKIP)
    #: Why the scores carry no information (every record scores the same), ``None`` when
    #: they make a test (:mod:`epsstar.statistics.attacks.uninformative`).
    uninformative_reason: str | None = field(
        default=None, metadata=json_rule(name="reason", omit_if_none=True)
    )

    @property
    def informative(self) -> bool:
        """Whether the scores make a membership test (an uninformative attack never is the
        headline, the strongest attack or one of the gate's tests)."""
        return self.uninformative_reason is None

    @json_property(after="settings", omit_if_none=True)
    def uninformative(self) -> bool | None:
        """``true`` for an attack whose scores carry no information (left out otherwise)."""
        return None if self.informative else True

    @json_property(after="name")
    def description(self) -> str:
        """The attack in one line, from its registry entry."""
        return ATTACKS[self.name].summary

    @json_property(after="name")
    def epsilon_star(self) -> float:
        return self.epsilon.epsilon

    @json_property(after="name")
    def delta(self) -> float:
        return self.epsilon.delta

    @json_property(after="name")
    def method(self) -> str:
        return self.epsilon.method

    @json_property(after="name")
    def epsilon_star_interval(self) -> BootstrapInterval | None:
        return self.epsilon.interval

    @json_property(after="empirical")
    def empirical_epsilon_star(self) -> float:
        return self.empirical.epsilon

    @json_property(after="empirical")
    def epsilon_lower_bound(self) -> float:
        return self.lower_bound.epsilon

    @json_property(after="readings")
    def tpr_at_fpr(self) -> tuple[TprReading, ...]:
        return self.readings.tpr_at_fpr

    @json_property(after="auc")
    def n_members(self) -> int:
        return self.epsilon.n_train

    @json_property(after="auc")
    def n_nonmembers(self) -> int:
        return self.epsilon.n_population

    def tpr_at(self, fpr: float) -> float:
        """The observed TPR of the attack at ``fpr`` (one of the readings' FPRs)."""
        for reading in self.readings.tpr_at_fpr:
            if reading.fpr == fpr:
                return reading.tpr_observed
        raise KeyError(fpr)
