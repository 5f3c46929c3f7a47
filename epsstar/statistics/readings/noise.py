"""How far an observed reading can exceed what (ε*, δ) allows through sampling noise alone.

The readings' "allowed" values are functions of Epsilon* (``conversions``); the observed
ones are sample estimates with their own noise. Even when the two loss distributions are
the same, so that ε* = 0 allows a membership advantage of δ and a TPR of FPR + δ, the
observed values come out above those:

* the observed membership advantage max_τ (TPR − FPR) is the one-sided two-sample
  Kolmogorov–Smirnov statistic D⁺ of the n training and m population losses. Under equal
  distributions P(D⁺ ≥ d) ≈ exp(−2 d² nm/(n + m)) (Smirnov's limit), so an observed value
  up to sqrt(ln(1/α)(n + m)/(2nm)) above the allowed one is noise at level α. SciPy's
  ``ks_2samp`` needs the samples; this is the closed form of its asymptotic tail.
* the observed TPR at a fixed FPR counts k of n members, and the test's FPR counts j of
  m non-members: both are estimates. The true TPR may be as low as its one-sided
  Clopper–Pearson lower limit and the true FPR as high as its upper limit
  (``scipy.stats.binomtest``), each at confidence 1 − α/2 so that both hold together with
  probability at least 1 − α (Bonferroni). The excess is beyond noise only when the TPR's
  lower limit is above what (ε*, δ) allows at the FPR's upper limit,
  TPR ≤ min(1, δ + e^ε·FPR, 1 − e^−ε·(1 − δ − FPR)) (``conversions.tpr_bound_dp``): the
  same joint reading of the two rates as the Clopper–Pearson lower bound of ε.

The confidence is the audit's (that of its lower bound); the lower bound itself uses the
same Clopper–Pearson limits (Nasr et al. 2021, "Adversary Instantiation: Lower Bounds for
Differentially Private Machine Learning", eq. 5).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.stats import binomtest

from epsstar.statistics.readings.conversions import tpr_bound_dp
from epsstar.statistics.readings.readings import Readings

__all__ = [
    "ReadingNoise",
    "advantage_noise",
    "fpr_upper_limit",
    "reading_noise",
    "tpr_lower_limit",
]


def advantage_noise(n_train: int, n_population: int, confidence: float) -> float:
    """The level-(1 − confidence) critical value of D⁺ for n and m records (module doc)."""
    n, m = n_train, n_population
    return math.sqrt(math.log(1.0 / (1.0 - confidence)) * (n + m) / (2.0 * n * m))


def tpr_lower_limit(tpr: float, n_train: int, confidence: float) -> float:
    """One-sided Clopper–Pearson lower limit of a TPR observed on ``n_train`` members."""
    count = min(n_train, max(0, round(tpr * n_train)))
    interval = binomtest(count, n_train, alternative="greater").proportion_ci(confidence, "exact")
    return float(interval.low)


def fpr_upper_limit(fpr: float, n_population: int, confidence: float) -> float:
    """One-sided Clopper–Pearson upper limit of an FPR observed on ``n_population``
    non-members (a reading's FPR is the most its test may flag: the count rounds down)."""
    count = min(n_population, max(0, math.floor(fpr * n_population + 1e-9)))
    interval = binomtest(count, n_population, alternative="less").proportion_ci(confidence, "exact")
    return float(interval.high)


@dataclass(frozen=True, slots=True)
class ReadingNoise:
    """Which observed readings exceed their allowed values, and whether only by noise.

    ``advantage_noise`` is the excess of the observed advantage that noise explains;
    ``tpr_lower_limits`` and ``fpr_upper_limits`` the limits of the observed TPRs and of
    their tests' FPRs (each at 1 − α/2), and ``tpr_allowed_at_limit`` what (ε*, δ) allows at
    the FPR's upper limit, in the readings' order.
    ``*_above`` says an observed value is above the allowed one; ``*_beyond_noise`` that it
    is so by more than noise explains (then the test shows more than ε* accounts for).
    """

    confidence: float
    advantage_noise: float
    advantage_above: bool
    advantage_beyond_noise: bool
    tpr_lower_limits: tuple[float, ...]
    fpr_upper_limits: tuple[float, ...]
    tpr_allowed_at_limit: tuple[float, ...]
    tpr_above: tuple[bool, ...]
    tpr_beyond_noise: tuple[bool, ...]

    @property
    def any_above(self) -> bool:
        return self.advantage_above or any(self.tpr_above)

    @property
    def any_within_noise(self) -> bool:
        """Some observed value is above its allowed one, but by no more than noise."""
        pairs = zip(self.tpr_above, self.tpr_beyond_noise, strict=True)
        advantage = self.advantage_above and not self.advantage_beyond_noise
        return advantage or any(above and not beyond for above, beyond in pairs)

    @property
    def any_beyond_noise(self) -> bool:
        return self.advantage_beyond_noise or any(self.tpr_beyond_noise)


def reading_noise(
    readings: Readings,
    n_train: int,
    n_population: int,
    confidence: float,
    *,
    epsilon: float,
    delta: float,
) -> ReadingNoise:
    """Compare each observed reading of an audit with what (ε*, δ) allows (module doc)."""
    noise = advantage_noise(n_train, n_population, confidence)
    excess = readings.advantage_observed - readings.advantage_bound
    each = 1.0 - (1.0 - confidence) / 2.0  # the TPR's and the FPR's limits hold together
    tprs = readings.tpr_at_fpr
    lows = tuple(tpr_lower_limit(t.tpr_observed, n_train, each) for t in tprs)
    highs = tuple(fpr_upper_limit(t.fpr, n_population, each) for t in tprs)
    allowed = tuple(tpr_bound_dp(high, epsilon, delta) for high in highs)
    return ReadingNoise(
        confidence=confidence,
        advantage_noise=noise,
        advantage_above=excess > 0,
        advantage_beyond_noise=excess > noise,
        tpr_lower_limits=lows,
        fpr_upper_limits=highs,
        tpr_allowed_at_limit=allowed,
        tpr_above=tuple(t.tpr_observed > t.tpr_bound for t in tprs),
        tpr_beyond_noise=tuple(low > bound for low, bound in zip(lows, allowed, strict=True)),
    )
