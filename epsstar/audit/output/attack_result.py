"""The frozen record of one membership test's audit: Epsilon* and the test's power.

Every attack (:data:`epsstar.statistics.names.ATTACKS`) gives one score per record,
oriented like a loss; its record holds what the loss attack's audit holds for the loss
(the headline Epsilon* with its interval, the empirical Epsilon*, the held-out lower
bound, the gate's statistic, the TPR at 0.1 % and 1 % FPR) and the test's AUC.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from epsstar.plumbing.json_types import JsonObject
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.bounds.from_counts import EpsilonLowerBound
from epsstar.statistics.bounds.gate import GateStatistic
from epsstar.statistics.estimators.delta_profile import DeltaPoint
from epsstar.statistics.names import ATTACKS, AttackName
from epsstar.statistics.readings.readings import Readings
from epsstar.statistics.results import EpsilonStarResult

__all__ = ["AttackResult"]


@dataclass(frozen=True, slots=True)
class AttackResult:
    """One attack's audit on ``n_members`` training and ``n_nonmembers`` population records.

    ``settings`` records how the scores were made (reference models, the OUT variance of
    LiRA, RMIA's ``a`` and ``γ`` and its split of the population into scored records and
    ``z`` records). ``member_scores`` and ``nonmember_scores`` are the scores themselves.
    """

    name: AttackName
    epsilon: EpsilonStarResult
    empirical: EpsilonStarResult
    lower_bound: EpsilonLowerBound
    gate: GateStatistic | None
    readings: Readings
    auc: float
    settings: JsonObject
    member_scores: FloatArray = field(default_factory=lambda: np.empty(0), repr=False)
    nonmember_scores: FloatArray = field(default_factory=lambda: np.empty(0), repr=False)
    #: Epsilon* from δ = 10/n down to the audit's δ, as for the loss attack.
    delta_profile: tuple[DeltaPoint, ...] = ()
    #: The population rows that ``nonmember_scores`` score, in order (``None``: every
    #: row; RMIA sets its ``z`` records aside).
    nonmember_rows: NDArray[np.int64] | None = field(default=None, repr=False)

    @property
    def n_members(self) -> int:
        return self.epsilon.n_train

    @property
    def n_nonmembers(self) -> int:
        return self.epsilon.n_population

    def tpr_at(self, fpr: float) -> float:
        """The observed TPR of the attack at ``fpr`` (one of the readings' FPRs)."""
        for reading in self.readings.tpr_at_fpr:
            if reading.fpr == fpr:
                return reading.tpr_observed
        raise KeyError(fpr)

    def to_dict(self) -> JsonObject:
        headline = self.epsilon.to_dict()
        return {
            "attack": self.name,
            "description": ATTACKS[self.name].summary,
            "epsilon_star": self.epsilon.epsilon,
            "delta": self.epsilon.delta,
            "method": headline["method"],
            "epsilon_star_interval": headline["epsilon_star_interval"],
            "empirical_epsilon_star": self.empirical.epsilon,
            "epsilon_lower_bound": self.lower_bound.epsilon,
            "lower_bound": self.lower_bound.to_dict(),
            "gate": None if self.gate is None else self.gate.to_dict(),
            "tpr_at_fpr": [reading.to_dict() for reading in self.readings.tpr_at_fpr],
            "auc": self.auc,
            "n_members": self.n_members,
            "n_nonmembers": self.n_nonmembers,
            "settings": self.settings,
        }
