"""Offline LiRA: the likelihood-ratio membership test without models trained on the record.

Carlini, Chien, Nasr, Song, Terzis, Tramèr, "Membership Inference Attacks From First
Principles", IEEE S&P 2022, §IV (Algorithm 1 and its offline variant), formula by formula:

* the statistic is the logit-scaled confidence ``φ = log(p_y / (1 − p_y))`` of the true
  label (:mod:`epsstar.statistics.attacks.confidence`);
* K reference ("shadow") models, none trained on record ``i``, give ``φ_{k,i}``; the OUT
  distribution of record ``i`` is the Gaussian ``N(μ_i, σ_i²)`` with
  ``μ_i = (1/K) Σ_k φ_{k,i}`` and ``σ_i²`` their sample variance;
* with few reference models the per-record variance is noisy, and the paper uses one
  global variance for all records (below 64 shadow models): here the pooled within-record
  variance ``σ² = (1/N) Σ_i σ_i²``, or for K = 1 the variance of all ``φ_{1,i}``;
* the offline test is one-sided: ``Λ_i = 1 − Pr[Z > φ_i]``, ``Z ~ N(μ_i, σ_i²)``, with
  ``φ_i`` the target model's statistic; the record is called a member when Λ is large,
  i.e. when the one-sided likelihood ``1 − F_i(φ_i) = Φ((μ_i − φ_i)/σ_i)`` is small.

The score, oriented like a loss (lower = more member-like), is the standardised statistic
``s_i = (μ_i − φ_i)/σ_i = Φ^{-1}(1 − F_i(φ_i))``: an increasing function of the one-sided
likelihood, so both give the same tests, TPR at every FPR, AUC and empirical Epsilon*;
unlike ``1 − F`` it does not round to 0 or 1 beyond about 8 σ (so no ties there), and for
non-members it is standard normal when the Gaussian OUT model holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import norm

from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import FloatArray, finite_vector
from epsstar.statistics.attacks.confidence import log_odds_matrix

__all__ = ["PER_RECORD_VARIANCE_FROM", "LiraScores", "LiraVariance", "lira_offline"]

LiraVariance = Literal["global", "per_record"]

#: With this many reference models or more, each record gets its own variance (the paper
#: uses a global variance for fewer than 64 shadow models).
PER_RECORD_VARIANCE_FROM: Final[int] = 64

_TINY: Final[float] = 1e-30  # a variance of exactly 0 must not divide by zero


@dataclass(frozen=True, slots=True)
class LiraScores:
    """Offline LiRA on N records from K reference models.

    ``scores`` (lower = more member-like) are ``(μ_i − φ_i)/σ_i``; ``likelihoods`` the
    one-sided ``1 − F_i(φ_i) = Φ(score)``; ``mean`` and ``std`` the OUT Gaussians.
    """

    scores: FloatArray
    likelihoods: FloatArray
    mean: FloatArray
    std: FloatArray
    variance: LiraVariance
    n_reference: int


def _std(references: FloatArray, variance: LiraVariance) -> FloatArray:
    k, n = references.shape
    if variance == "per_record":
        per_record: FloatArray = references.std(axis=0, ddof=1)
        return np.maximum(per_record, _TINY)
    # K = 1: no within-record spread to pool, so the spread across records stands in.
    pooled = float(references.var() if k == 1 else references.var(axis=0, ddof=1).mean())
    return np.full(n, max(np.sqrt(pooled), _TINY))


def lira_offline(
    target: ArrayLike,
    references: ArrayLike,
    *,
    variance: LiraVariance | None = None,
) -> LiraScores:
    """Offline LiRA scores of N records (see the module docstring).

    ``target`` holds the target model's log-odds ``φ_i`` of the true label (N values),
    ``references`` those of K reference models, shape ``(K, N)``, none trained on any of
    the N records. ``variance`` is ``"global"`` or ``"per_record"`` (default: per record
    from :data:`PER_RECORD_VARIANCE_FROM` reference models on, else global).
    """
    phi = finite_vector("target log-odds", target)
    out = log_odds_matrix("reference log-odds", references, phi.size)
    k = out.shape[0]
    chosen: LiraVariance = (
        ("per_record" if k >= PER_RECORD_VARIANCE_FROM else "global")
        if variance is None
        else variance
    )
    if chosen not in ("global", "per_record"):
        raise InvalidInputError(f"variance must be 'global' or 'per_record'. Found {chosen!r}.")
    if chosen == "per_record" and k < 2:
        raise InvalidInputError(
            f"a per-record variance needs at least 2 reference models. Found {k}."
        )
    mean: FloatArray = out.mean(axis=0)
    std = _std(out, chosen)
    scores: FloatArray = (mean - phi) / std
    return LiraScores(
        scores=scores,
        likelihoods=norm.cdf(scores),
        mean=mean,
        std=std,
        variance=chosen,
        n_reference=k,
    )
