"""Statistical lower bounds on ε from counted attack errors.

An attack that tries to tell apart two neighbouring training sets makes false
positives (it says "member" for a non-member) and false negatives. Their
Clopper–Pearson upper confidence bounds turn the error counts into a lower
bound on ε that holds with a stated confidence (eq. 5 of Nasr et al. 2021, "Adversary
Instantiation: Lower Bounds for Differentially Private Machine Learning"). Per-model Epsilon* values
are pooled into a mechanism-level figure with :func:`mechanism_epsilon` (Theorem 2 of
Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import logsumexp

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.json_records import JsonRecord
from epsstar.statistics._validation import (
    FloatArray,
    check_confidence,
    check_delta,
    check_positive_int,
    finite_vector,
)

__all__ = [
    "EpsilonLowerBound",
    "bonferroni_confidence",
    "clopper_pearson_upper",
    "clopper_pearson_uppers",
    "epsilon_lower_bound",
    "mechanism_epsilon",
]


def _check_count(name: str, count: Any, total_name: str, total: int) -> int:
    """A count of events in ``total`` trials: an integer in [0, total]."""
    value = check_positive_int(name, count, minimum=0)
    if value > total:
        raise InvalidInputError(
            f"{name} must be an integer in [0, {total_name}] = [0, {total}]. Found {value}."
        )
    return value


def _check_error_counts(
    false_positives: Any, negatives: Any, false_negatives: Any, positives: Any
) -> tuple[int, int, int, int]:
    """Validated (false_positives, negatives, false_negatives, positives)."""
    n_neg = check_positive_int("negatives", negatives, minimum=1)
    n_pos = check_positive_int("positives", positives, minimum=1)
    fp = _check_count("false_positives", false_positives, "negatives", n_neg)
    fn = _check_count("false_negatives", false_negatives, "positives", n_pos)
    return fp, n_neg, fn, n_pos


def clopper_pearson_upper(count: int, n: int, confidence: float) -> float:
    """Upper end of the two-sided Clopper–Pearson interval for a binomial rate.

    With ``count`` successes in ``n`` trials this is the (1 + c)/2 quantile of
    Beta(count + 1, n − count), and 1 when ``count == n``. As a one-sided bound
    it fails (lies below the true rate) with probability at most (1 − c)/2.
    """
    trials = check_positive_int("n", n, minimum=1)
    successes = _check_count("count", count, "n", trials)
    level = check_confidence(confidence)
    return float(clopper_pearson_uppers(np.array([successes]), trials, level)[0])


def clopper_pearson_uppers(counts: NDArray[np.int64], n: int, confidence: float) -> FloatArray:
    """:func:`clopper_pearson_upper` of each of ``counts`` (integers in [0, n]), unchecked."""
    # Imported here: statsmodels is slow to import and only this function needs it.
    from statsmodels.stats.proportion import proportion_confint

    _, upper = proportion_confint(counts, n, alpha=1.0 - confidence, method="beta")
    return np.asarray(upper, dtype=np.float64)


@dataclass(frozen=True, slots=True)
class EpsilonLowerBound(JsonRecord):
    """A confidence lower bound on ε and the counts it was computed from.

    ``fpr_upper`` and ``fnr_upper`` are the Clopper–Pearson upper bounds of the
    false positive rate (``false_positives / negatives``) and false negative
    rate (``false_negatives / positives``) used in the bound. A bound from a
    loss-threshold test also records the test: its ``threshold`` and its
    ``direction``, ``"members_lower"`` (loss ≤ threshold is called a member) or
    ``"members_higher"`` (loss > threshold is); both are ``None`` for bare counts.
    """

    epsilon: float
    fpr_upper: float
    fnr_upper: float
    delta: float
    confidence: float
    false_positives: int
    negatives: int
    false_negatives: int
    positives: int
    threshold: float | None = None
    direction: str | None = None


def _log_ratio(numerator: float, denominator: float) -> float:
    """log(numerator / denominator), or 0 when the numerator is not positive."""
    if numerator <= 0.0:
        return 0.0
    return math.log(numerator) - math.log(denominator)


def epsilon_lower_bound(
    false_positives: int,
    negatives: int,
    false_negatives: int,
    positives: int,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
) -> EpsilonLowerBound:
    """Lower confidence bound on ε from an attack's error counts.

    Nasr et al., eq. 5:

        ε_lo = max(0, log((1 − δ − FP⁺) / FN⁺), log((1 − δ − FN⁺) / FP⁺)),

    where FP⁺ and FN⁺ are the Clopper–Pearson upper bounds (at ``confidence``)
    of FPR = ``false_positives / negatives`` and FNR = ``false_negatives /
    positives``. A term whose numerator is not positive contributes nothing.

    Each upper bound is the upper end of a two-sided interval, so it fails with
    probability at most (1 − confidence)/2; by the union bound both hold at once
    with probability ≥ confidence. On that event the true rates are below FP⁺
    and FN⁺, and since the bound decreases in both rates, any mechanism that is
    (ε, δ)-DP has ε ≥ ε_lo. Example: no error in 1000 + 1000 trials at δ = 0 and
    95 % confidence gives ε_lo ≈ 5.60, the figure quoted by Nasr et al.
    """
    fp, n_neg, fn, n_pos = _check_error_counts(
        false_positives, negatives, false_negatives, positives
    )
    d = check_delta(delta, allow_zero=True)
    level = check_confidence(confidence)

    fpr_upper = clopper_pearson_upper(fp, n_neg, level)
    fnr_upper = clopper_pearson_upper(fn, n_pos, level)
    # Both upper bounds are > 0 because n ≥ 1, so the denominators are safe.
    epsilon = max(
        0.0,
        _log_ratio(1.0 - d - fpr_upper, fnr_upper),
        _log_ratio(1.0 - d - fnr_upper, fpr_upper),
    )
    return EpsilonLowerBound(
        epsilon=epsilon,
        fpr_upper=fpr_upper,
        fnr_upper=fnr_upper,
        delta=d,
        confidence=level,
        false_positives=fp,
        negatives=n_neg,
        false_negatives=fn,
        positives=n_pos,
    )


def mechanism_epsilon(values: ArrayLike | Sequence[float]) -> float:
    """Pool the Epsilon* of K model instances into a mechanism-level figure.

    Theorem 2 of Negoescu et al. bounds the mechanism-level
    lower bound by ε̄ ≤ log E_θ[exp(ε*(θ))]; this returns the sample version

        log((1/K) Σ_k exp(ε*_k)) = logsumexp(ε*) − log K,

    which stays finite where exp(ε*_k) overflows (ε*_k ≳ 709). The result lies
    between min(ε*) and max(ε*) and equals the common value when all agree.
    """
    array = finite_vector("values", values, min_size=1)
    negative = array < 0.0
    if negative.any():
        index = int(np.flatnonzero(negative)[0])
        raise InvalidInputError(
            f"values must be ≥ 0; {int(negative.sum())} value(s) are not, the first at index "
            f"{index}. Found {array[index]}."
        )
    pooled = float(logsumexp(array)) - math.log(array.size)
    # Rounding can push the result a hair outside [min, max]; the exact value cannot be.
    return min(max(pooled, float(array.min())), float(array.max()))


def bonferroni_confidence(confidence: float, n_tests: int) -> float:
    """The confidence ``1 - (1 - c)/m`` at which each of ``m`` bounds (or tests at level
    ``1 - c``) is computed so that all of them hold at once with probability at least ``c``
    (Bonferroni's inequality)."""
    level = check_confidence(confidence)
    return 1.0 - (1.0 - level) / max(1, n_tests)
