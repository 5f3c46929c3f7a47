"""Attribute inference: how much better an attacker guesses a member's attribute than a
non-member's, and the bound DP-SGD gives it.

**The attack** (Yeom et al. 2018, "Privacy risk in machine learning: analyzing the
connection to overfitting", the attribute attack): for each record, try every value of the
attribute and guess the one under which the model gives the record's label the lowest loss.
Its *attribute advantage* is the accuracy on members less the accuracy on non-members.

**An ε reading.** The guess being right is a membership test: "member when the attribute is
guessed right" has TPR = accuracy on members and FPR = accuracy on non-members, so an
(ε, δ)-DP model has accuracy_members ≤ e^ε · accuracy_nonmembers + δ (and the same for the
errors, swapped). :func:`attribute_reading` gives the ε these accuracies imply and its
Clopper-Pearson lower bound (:func:`epsstar.statistics.bounds.from_counts.epsilon_lower_bound`,
the test fixed before counting, so no split is needed).

**The bound of a model trained by DP-SGD with the attribute tracked** (§5, Corollary 10
of Cherubin et al. 2024, "Closed-Form Bounds for DP-SGD against Record-level Inference"): Bayes
security against attribute inference β* ≥ 1 − erf(p·‖R‖ / (2√2·σ·C)) − O(√(pT)/σ), with R_t the
largest distance, over the batch's records and pairs of attribute values, between the clipped
gradients of a record with the attribute set to either value. The attacker's (generalised) advantage
is 1 − β*. :func:`attribute_bayes_security` gives the leading term (the O(·) term dropped, as in
:func:`epsstar.statistics.readings.conversions.bayes_security_dpsgd`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import erf, erfc

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.json_records import JsonRecord, json_rule
from epsstar.statistics._validation import check_in_range
from epsstar.statistics.bounds.from_counts import EpsilonLowerBound, epsilon_lower_bound
from epsstar.statistics.readings.conversions import advantage_bound_dp

__all__ = [
    "FROM_DP",
    "FROM_GRADIENTS",
    "AttributeReading",
    "AttributeSecurity",
    "attribute_bayes_security",
    "attribute_reading",
    "attribute_security_from_dp",
]


@dataclass(frozen=True, slots=True)
class AttributeReading:
    """Accuracies of the attribute guess on members and non-members, the advantage, the ε
    they imply at δ and its lower bound."""

    members_right: int
    members: int
    nonmembers_right: int
    nonmembers: int
    advantage: float
    epsilon: float
    lower_bound: EpsilonLowerBound

    @property
    def accuracy_members(self) -> float:
        return self.members_right / self.members

    @property
    def accuracy_nonmembers(self) -> float:
        return self.nonmembers_right / self.nonmembers


def _log_ratio(numerator: float, denominator: float) -> float:
    if numerator <= 0:
        return 0.0
    if denominator <= 0:
        return math.inf
    return max(0.0, math.log(numerator / denominator))


def attribute_reading(
    members_right: int,
    members: int,
    nonmembers_right: int,
    nonmembers: int,
    *,
    delta: float,
    confidence: float = 0.95,
) -> AttributeReading:
    """The reading of the attribute guess's counts (see the module docstring)."""
    if members < 1 or nonmembers < 1:
        raise InvalidInputError(
            f"attribute inference needs members and non-members. Found {members} and {nonmembers}."
        )
    tpr, fpr = members_right / members, nonmembers_right / nonmembers
    epsilon = max(_log_ratio(tpr - delta, fpr), _log_ratio(1 - fpr - delta, 1 - tpr))
    bound = epsilon_lower_bound(
        nonmembers_right,
        nonmembers,
        members - members_right,
        members,
        delta=delta,
        confidence=confidence,
    )
    return AttributeReading(
        members_right, members, nonmembers_right, nonmembers, tpr - fpr, epsilon, bound
    )


#: Where an :class:`AttributeSecurity` comes from.
FROM_GRADIENTS = "tracked gradients (Cherubin et al. 2024, Corollary 10)"
FROM_DP = "declared (epsilon, delta) (Humphries et al., eq. 5 of Cherubin et al. 2024)"


@dataclass(frozen=True, slots=True)
class AttributeSecurity(JsonRecord):
    """A bound on attribute inference: the Bayes security β* and the advantage 1 − β* it
    allows, and where it comes from (``source``; ``error_order`` and ``r_norm`` only for
    the bound of tracked gradients)."""

    beta: float = field(metadata=json_rule(name="bayes_security"))
    advantage: float = field(metadata=json_rule(name="advantage_bound"))
    error_order: float | None
    r_norm: float | None
    source: str = FROM_GRADIENTS


def attribute_security_from_dp(epsilon: float, delta: float) -> AttributeSecurity:
    """The bound an (ε, δ)-DP training run gives the attribute guess's advantage, whatever
    its gradients were.

    The guess being right is a test of the record's membership (module docstring), so its
    advantage, accuracy on members less accuracy on non-members, is a TPR − FPR, which
    (ε, δ)-DP under the add/remove relation (the relation ``epsstar train`` accounts
    with) bounds by (e^ε − 1 + 2δ) / (e^ε + 1) (Humphries et al., eq. 5 of
    Cherubin et al., whose §4.2.1 reads as β* ≥
    2(1 − δ) / (e^ε + 1)). §5.1 there shows that without looking at the gradients no
    bound on attribute inference can do better than the membership one; the
    data-dependent bound of :func:`attribute_bayes_security` can.
    """
    advantage = advantage_bound_dp(epsilon, delta)
    return AttributeSecurity(1.0 - advantage, advantage, None, None, FROM_DP)


def attribute_bayes_security(
    sampling_rate: float, r_per_step: object, noise_multiplier: float, clip_norm: float
) -> AttributeSecurity:
    """β* ≥ 1 − erf(p·‖R‖ / (2√2·σ·C)) (Cherubin et al. 2024, Corollary 10), leading term;
    ``r_per_step`` holds R_t of every step."""
    p = check_in_range("sampling_rate", sampling_rate, 0.0, 1.0, high_inclusive=True)
    r = np.asarray(r_per_step, dtype=np.float64)
    if r.ndim != 1 or r.size == 0 or not np.all(np.isfinite(r)) or np.any(r < 0):
        raise InvalidInputError(
            f"R must hold one finite distance ≥ 0 per step. Found {r.size} values."
        )
    sigma = check_in_range("noise_multiplier", noise_multiplier, 0.0, math.inf)
    c = check_in_range("clip_norm", clip_norm, 0.0, math.inf)
    norm = float(np.linalg.norm(r))
    argument = p * norm / (2 * math.sqrt(2) * sigma * c)
    return AttributeSecurity(
        beta=float(erfc(argument)),
        advantage=float(erf(argument)),
        error_order=math.sqrt(p * r.size) / sigma,
        r_norm=norm,
    )
