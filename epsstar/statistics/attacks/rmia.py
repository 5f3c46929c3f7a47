"""Offline RMIA: the target's likelihood ratio on a record against population records.

Zarifzadeh, Liu, Shokri, "Low-Cost High-Power Membership Inference Attacks", ICML 2024,
formula by formula (§3 and the offline setting):

* ``Pr(x|θ)`` is the probability the model θ gives the true label of ``x``;
* ``Pr(x)`` is its average over reference models; offline, with K reference models that
  all exclude ``x`` (OUT), it is approximated by the linear scaling
  ``Pr(x) = ½((1 + a)·Pr_OUT(x) + (1 − a))``, ``Pr_OUT(x) = (1/K) Σ_k Pr(x|θ_k)``, with
  ``a`` in [0, 1] (``a = 1``: no correction);
* the pairwise likelihood ratio of ``x`` against a population record ``z`` is
  ``LR_θ(x, z) = (Pr(x|θ) / Pr(x)) · (Pr(z|θ) / Pr(z))^{-1}``, with ``Pr(z)`` from the
  same OUT reference models and the same scaling;
* the membership score is ``Score(x; θ) = Pr_z(LR_θ(x, z) ≥ γ)``, the fraction of
  population records ``z`` that ``x`` dominates by a factor γ; members score high.

The score here, oriented like a loss (lower = more member-like), is ``1 − Score(x; θ)``.
Ratios are compared as logarithms, ``log r_z ≤ log r_x − log γ``, after one sort of the
``z`` ratios. The ``z`` records must not be scored records themselves (the caller keeps
them apart) and, like the scored non-members, must be OUT for every reference model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import log_expit

from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import FloatArray, check_in_range, finite_vector
from epsstar.statistics.attacks.confidence import log_odds_matrix
from epsstar.statistics.attacks.defaults import DEFAULT_A, DEFAULT_GAMMA

__all__ = ["DEFAULT_A", "DEFAULT_GAMMA", "RmiaScores", "log_ratio", "rmia_offline"]


@dataclass(frozen=True, slots=True)
class RmiaScores:
    """Offline RMIA on N records against ``n_z`` population records.

    ``scores`` (lower = more member-like) are ``1 − Pr_z(LR(x, z) ≥ γ)``; ``log_ratios``
    the ``log(Pr(x|θ)/Pr(x))`` of the records.
    """

    scores: FloatArray
    log_ratios: FloatArray
    n_z: int
    a: float
    gamma: float
    n_reference: int


def log_ratio(target: FloatArray, references: FloatArray, a: float) -> FloatArray:
    """``log(Pr(x|θ) / Pr(x))`` from log-odds, ``Pr(x)`` by the offline scaling with ``a``."""
    out_mean = np.exp(log_expit(references)).mean(axis=0)
    prior = 0.5 * ((1.0 + a) * out_mean + (1.0 - a))
    result: FloatArray = log_expit(target) - np.log(prior)
    return result


def rmia_offline(
    target: ArrayLike,
    references: ArrayLike,
    target_z: ArrayLike,
    references_z: ArrayLike,
    *,
    a: float = DEFAULT_A,
    gamma: float = DEFAULT_GAMMA,
) -> RmiaScores:
    """Offline RMIA scores of N records (see the module docstring).

    ``target`` and ``target_z`` are the target model's log-odds of the true label on the
    N records and on the population records ``z``; ``references`` (K, N) and
    ``references_z`` (K, n_z) those of the same K reference models.
    """
    a = check_in_range("a", a, 0.0, 1.0, low_inclusive=True, high_inclusive=True)
    gamma = check_in_range("gamma", gamma, 0.0, float("inf"))
    x = finite_vector("target log-odds", target)
    z = finite_vector("target log-odds on the z records", target_z)
    refs_x = log_odds_matrix("reference log-odds", references, x.size)
    refs_z = log_odds_matrix("reference log-odds on the z records", references_z, z.size)
    if refs_x.shape[0] != refs_z.shape[0]:
        raise InvalidInputError(
            f"the reference models must be the same on the records and the z records. "
            f"Found {refs_x.shape[0]} and {refs_z.shape[0]}."
        )
    ratio_x = log_ratio(x, refs_x, a)
    ratio_z = np.sort(log_ratio(z, refs_z, a))
    dominated = np.searchsorted(ratio_z, ratio_x - np.log(gamma), side="right")
    scores: FloatArray = 1.0 - dominated / z.size
    return RmiaScores(scores, ratio_x, int(z.size), a, gamma, int(refs_x.shape[0]))
