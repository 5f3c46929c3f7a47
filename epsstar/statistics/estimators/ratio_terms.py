"""The four ratios of Definition 2 (eq. 7) of Epsilon*, in log space.

Definition 2 is that of Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning
Models".

For a test with false-positive rate ``t`` and false-negative rate ``eta``::

    eps* = log max(1, (1-δ-η)/t, (1-δ-t)/η, (η-δ)/(1-t), (t-δ)/(1-η))

restricted to tests whose rate in the ratio's denominator (``t`` for the first and
third, ``η`` for the second and fourth) lies inside an open interval of admissible
rates, ``(δ, 1-δ)`` by default. The paper's footnote 2 restricts both rates; only the
denominator needs it (a rate there near 0 is where the data run out), while a
numerator rate of 0 is evidence, not a reason to drop the test: a test with FNR 0 at
FPR ``f`` needs ``e^ε ≥ (1-δ)/f`` for (ε, δ)-DP to hold. Every quantity is
taken on the log scale, with ``log(a - δ) = log a + log(1 - exp(log δ - log a))``,
so tails where ``t`` is 1e-300 lose no precision.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.statistics._validation import FloatArray

__all__ = ["TERM_NAMES", "RateWindow", "Supremum", "log_ratio_terms"]

#: What attains Epsilon*: 0 is the constant 1 in eq. 7 (Epsilon* = 0).
TERM_NAMES: dict[int, str] = {
    0: "1",
    1: "(1-delta-FNR)/FPR",
    2: "(1-delta-FPR)/FNR",
    3: "(FNR-delta)/(1-FPR)",
    4: "(FPR-delta)/(1-FNR)",
}


@dataclass(frozen=True, slots=True)
class RateWindow:
    """Admissible rates: each ratio's denominator rate must lie in the open interval
    ``(low, high)`` (FPR for the first and third ratio, FNR for the second and fourth)."""

    low: float
    high: float

    @classmethod
    def for_delta(cls, delta: float) -> RateWindow:
        return cls(delta, 1.0 - delta)

    @property
    def log_low(self) -> float:
        return float(np.log(self.low)) if self.low > 0 else -np.inf

    @property
    def log_one_minus_high(self) -> float:
        return float(np.log1p(-self.high)) if self.high < 1 else -np.inf


@dataclass(frozen=True, slots=True)
class Supremum(JsonRecord):
    """Where the maximum of eq. 7 over thresholds is attained.

    ``threshold`` is on the scale the rates were computed on (loss-ordered:
    the test rejects H0, "not a member", when the score is ≤ threshold).
    """

    epsilon: float
    threshold: float
    fpr: float
    fnr: float
    #: Which term of eq. 7 attains the maximum (written as its name, :attr:`term_name`).
    term: int = field(metadata=json_rule(skip=True))

    @json_property(name="attained_by")
    def term_name(self) -> str:
        return TERM_NAMES[self.term]


def _log_minus(log_a: FloatArray, log_b: float) -> FloatArray:
    """``log(exp(log_a) - exp(log_b))``; ``-inf`` where it is not positive."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        gap = log_b - log_a
        result = log_a + np.log(-np.expm1(gap))
    return np.where(gap < 0, result, -np.inf)


def log_ratio_terms(
    log_fpr: ArrayLike,
    log_one_minus_fpr: ArrayLike,
    log_fnr: ArrayLike,
    log_one_minus_fnr: ArrayLike,
    delta: float,
    window: RateWindow,
) -> FloatArray:
    """The logs of the four ratios of eq. 7, shape ``(4, n)``; ``-inf`` where a ratio's
    denominator rate is outside ``window``."""
    lt, l1t, le, l1e = (
        np.atleast_1d(np.asarray(v, dtype=np.float64))
        for v in (log_fpr, log_one_minus_fpr, log_fnr, log_one_minus_fnr)
    )
    log_delta = float(np.log(delta)) if delta > 0 else -np.inf
    with np.errstate(invalid="ignore"):
        fpr_held = (lt > window.log_low) & (l1t > window.log_one_minus_high)
        fnr_held = (le > window.log_low) & (l1e > window.log_one_minus_high)
        admissible = np.stack([fpr_held, fnr_held, fpr_held, fnr_held])
        terms = np.stack(
            [
                _log_minus(l1e, log_delta) - lt,
                _log_minus(l1t, log_delta) - le,
                _log_minus(le, log_delta) - l1t,
                _log_minus(lt, log_delta) - l1e,
            ]
        )
    return np.where(admissible & ~np.isnan(terms), terms, -np.inf)
