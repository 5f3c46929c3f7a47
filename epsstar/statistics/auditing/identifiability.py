"""The DI adversary's readings: posterior beliefs and advantage beside their analytical bounds.

Bernau et al. 2021, "Quantifying identifiability to choose and audit ε in differentially private
deep learning": the adversary A_DI of Algorithm 1 knows both neighbouring data sets D and D' and the
mechanism, observes every noisy gradient and updates its belief in each data set by Lemma 1 (uniform
prior, Gaussian likelihoods); it guesses the data set with the higher posterior belief. From its
final log posterior odds s (log β(D')/β(D), D' the data set with the canary) over a set of
experiments (here: canaries, each included or not):

* the belief in the true data set is σ(s) when the canary was included, σ(−s) when not; the
  largest one, β_max, gives ε' = ln(β_max/(1 − β_max)) (Section 5.3, from Eq. (5)), the
  log-odds itself so that β_max = 1 in floating point stays finite;
* the adversary wins an experiment when its belief in the truth exceeds ½; its advantage
  Adv = 2·wins/n − 1 (Definition 5) gives ε' = 2·sqrt(2 ln(1.25/δ))·Φ^{-1}((Adv + 1)/2),
  the exact inverse of Theorem 3 (Section 5.3; the paper's Eq. (6) prints it without the
  factor 2, which would not invert Theorem 3);
* δ' is the share of experiments whose belief in the truth exceeds ρ_β (Section 6.2);
* the analytical bounds of the claim (ε, δ): ρ_β = 1/(1 + e^{-ε}) (Theorem 2) and
  ρ_α = 2Φ(ε/(2 sqrt(2 ln(1.25/δ)))) − 1 (Theorem 3, the Gaussian mechanism).

These readings are the paper's estimates, not bounds with a confidence: the refutation of a
claim rests on the one-run and many-run bounds of this package, which the same scores feed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from epsstar.plumbing.records.json_records import JsonRecord
from epsstar.statistics._validation import check_delta, finite_vector
from epsstar.statistics.auditing._checks import check_claimed_epsilon
from epsstar.statistics.auditing.one_run.guesses import inclusion_bits
from epsstar.statistics.readings.conversions import (
    advantage_bound_gaussian,
    epsilon_from_advantage_gaussian,
    posterior_belief_bound,
)

__all__ = ["IdentifiabilityReading", "identifiability_reading"]


@dataclass(frozen=True, slots=True)
class IdentifiabilityReading(JsonRecord):
    """What the DI adversary's beliefs over ``experiments`` say, beside the claim's bounds.

    ``epsilon_from_advantage`` is ``None`` when the advantage is not in (0, 1) (Eq. (6)
    has no finite value when every experiment is won).
    """

    experiments: int
    wins: int
    advantage: float
    max_belief: float
    epsilon_from_belief: float
    epsilon_from_advantage: float | None
    delta_observed: float
    rho_beta: float
    rho_alpha: float
    claimed_epsilon: float
    delta: float


def identifiability_reading(
    log_odds: ArrayLike, included: ArrayLike, *, claimed_epsilon: float, delta: float
) -> IdentifiabilityReading:
    """The readings of the module from the adversary's final log posterior odds (in favour of
    the data set with the canary) and whether each canary was included."""
    odds = finite_vector("log_odds", log_odds, min_size=1)
    bits = inclusion_bits(included, odds.size)
    eps = check_claimed_epsilon(claimed_epsilon)
    d = check_delta(delta)
    truth = np.where(bits, odds, -odds)  # log-odds of the belief in the true data set
    wins = int(np.count_nonzero(truth > 0.0))
    advantage = 2.0 * wins / odds.size - 1.0
    rho_beta = posterior_belief_bound(eps)
    best = float(truth.max())
    rho_logit = math.inf if rho_beta >= 1.0 else math.log(rho_beta / (1.0 - rho_beta))
    return IdentifiabilityReading(
        experiments=int(odds.size),
        wins=wins,
        advantage=advantage,
        max_belief=float(1.0 / (1.0 + math.exp(-best))) if best > -700.0 else 0.0,
        epsilon_from_belief=best,
        epsilon_from_advantage=epsilon_from_advantage_gaussian(advantage, d)
        if 0.0 < advantage < 1.0
        else None,
        delta_observed=float(np.mean(truth > rho_logit)),
        rho_beta=rho_beta,
        rho_alpha=advantage_bound_gaussian(eps, d),
        claimed_epsilon=eps,
        delta=d,
    )
