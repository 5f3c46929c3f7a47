"""Plain-language readings of privacy parameters and conversions between them.

* posterior belief ρ_β and expected membership advantage ρ_α
  (Bernau et al. 2021, "Quantifying identifiability to choose and audit ε in differentially private
  deep learning");
* the advantage bound of Humphries et al. and the Bayes security of DP-SGD
  (Cherubin et al. 2024, "Closed-Form Bounds for DP-SGD against Record-level Inference");
* the (ε, δ) and μ-GDP trade-off curves (Dong, Roth & Su 2022, "Gaussian Differential Privacy").

Φ is the standard normal CDF throughout. All functions take and return floats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from scipy.optimize import brentq
from scipy.special import erf, erfc, erfcx, erfinv, expit, logit, ndtri

from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import check_confidence, check_in_range, check_positive_int
from epsstar.statistics.bounds.from_counts import _check_error_counts, clopper_pearson_upper

__all__ = [
    "CLOSED_FORM_BOUNDS_PAPER",
    "NEIGHBOURING_RELATIONS",
    "BayesSecurity",
    "advantage_bound_dp",
    "advantage_bound_gaussian",
    "advantage_bound_rdp",
    "bayes_security_dpsgd",
    "bayes_security_from_delta_at_zero",
    "epsilon_from_advantage_gaussian",
    "epsilon_from_posterior_belief",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu_from_normals",
    "gdp_mu_from_rates",
    "gdp_mu_lower_bound",
    "posterior_belief_bound",
    "tpr_bound_bayes_security",
    "tpr_bound_dp",
]

NEIGHBOURING_RELATIONS: tuple[str, ...] = ("substitution", "add_remove")

#: The paper of :func:`bayes_security_dpsgd`, as the ``source`` fields of outputs name it.
CLOSED_FORM_BOUNDS_PAPER = (
    'Cherubin et al. 2024, "Closed-Form Bounds for DP-SGD against Record-level Inference"'
)

_SQRT2 = math.sqrt(2.0)
_LOG2 = math.log(2.0)


# --- argument checks -------------------------------------------------------------------------


def _nonnegative(name: str, value: Any) -> float:
    """A finite number ≥ 0."""
    return check_in_range(name, value, 0.0, math.inf, low_inclusive=True)


def _positive(name: str, value: Any) -> float:
    """A finite number > 0."""
    return check_in_range(name, value, 0.0, math.inf)


def _rate(name: str, value: Any) -> float:
    """A probability in [0, 1]."""
    return check_in_range(name, value, 0.0, 1.0, low_inclusive=True, high_inclusive=True)


def _finite(name: str, value: Any) -> float:
    """Any finite number."""
    return check_in_range(name, value, -math.inf, math.inf)


def _delta_open(value: Any) -> float:
    """δ in (0, 1), for formulas that take log δ."""
    return check_in_range("delta", value, 0.0, 1.0)


def _delta_closed(value: Any) -> float:
    """δ in [0, 1]."""
    return _rate("delta", value)


# --- posterior belief and advantage (Bernau et al.) ------------------------------------------


def posterior_belief_bound(epsilon: float) -> float:
    """Bound on the adversary's posterior belief, ρ_β = 1 / (1 + e^{−ε}).

    Theorem 2 of Bernau et al. (uniform prior over the two
    neighbouring datasets; with δ > 0 it holds with probability 1 − δ).
    """
    eps = _nonnegative("epsilon", epsilon)
    return float(expit(eps))


def epsilon_from_posterior_belief(rho: float) -> float:
    """The ε whose posterior-belief bound is ρ: ε = ln(ρ / (1 − ρ)), ρ in [0.5, 1).

    Eq. (5) of Bernau et al.; inverse of
    :func:`posterior_belief_bound`.
    """
    belief = check_in_range("rho", rho, 0.5, 1.0, low_inclusive=True)
    return max(0.0, float(logit(belief)))


def _gaussian_scale(delta: float) -> float:
    """sqrt(2 ln(1.25/δ)), the noise factor of the classical Gaussian mechanism."""
    return math.sqrt(2.0 * (math.log(1.25) - math.log(delta)))


def advantage_bound_gaussian(epsilon: float, delta: float) -> float:
    """Expected membership advantage of the Gaussian mechanism calibrated to (ε, δ).

    ρ_α = 2Φ(ε / (2·sqrt(2 ln(1.25/δ)))) − 1 (Theorem 3 of
    Bernau et al.), evaluated as erf(z/√2) to keep
    precision for small ε. δ must lie in (0, 1).
    """
    eps = _nonnegative("epsilon", epsilon)
    d = _delta_open(delta)
    z = eps / (2.0 * _gaussian_scale(d))
    return float(erf(z / _SQRT2))


def epsilon_from_advantage_gaussian(rho: float, delta: float) -> float:
    """The ε at which :func:`advantage_bound_gaussian` equals ρ, for ρ in [0, 1).

    ε = 2·sqrt(2 ln(1.25/δ))·Φ^{-1}((1 + ρ)/2). This is the exact inverse of
    Theorem 3 of Bernau et al.; the paper's eq. (6) prints
    it without the leading factor 2, which would not invert Theorem 3.
    """
    advantage = check_in_range("rho", rho, 0.0, 1.0, low_inclusive=True)
    d = _delta_open(delta)
    # Φ^{-1}((1 + ρ)/2) = √2·erfinv(ρ); near ρ = 1 use the exactly computed tail 1 − ρ.
    if advantage < 0.5:
        quantile = _SQRT2 * float(erfinv(advantage))
    else:
        quantile = -float(ndtri((1.0 - advantage) / 2.0))
    return 2.0 * _gaussian_scale(d) * quantile


def advantage_bound_rdp(epsilon_rdp: float, order: float) -> float:
    """Expected membership advantage of a Gaussian mechanism that is (α, ε_RDP)-RDP.

    ρ_α = 2Φ(sqrt(ε_RDP / (2α))) − 1 (Section 4.4 of
    Bernau et al.), evaluated as erf(sqrt(ε_RDP / (4α))).
    The order α must exceed 1.
    """
    eps = _nonnegative("epsilon_rdp", epsilon_rdp)
    alpha = check_in_range("order", order, 1.0, math.inf)
    return float(erf(math.sqrt(eps / (4.0 * alpha))))


def advantage_bound_dp(epsilon: float, delta: float) -> float:
    """Humphries et al.'s bound on the membership advantage of an (ε, δ)-DP mechanism.

    Adv ≤ (e^ε − 1 + 2δ) / (e^ε + 1) (eq. (5) of
    Cherubin et al.), evaluated as
    tanh(ε/2) + 2δ / (e^ε + 1) so that large ε does not overflow.
    """
    eps = _nonnegative("epsilon", epsilon)
    d = _delta_closed(delta)
    return min(1.0, math.tanh(eps / 2.0) + 2.0 * d * float(expit(-eps)))


def tpr_bound_dp(fpr: float, epsilon: float, delta: float) -> float:
    """Largest true positive rate an (ε, δ)-DP mechanism allows at a given FPR.

    (ε, δ)-DP is f_{ε,δ}-DP with f_{ε,δ}(x) = max(0, 1 − δ − e^ε x,
    e^{−ε}(1 − δ − x)) (Prop. 2.5 in Dong, Roth & Su), and the
    smallest achievable FNR at FPR = x is f_{ε,δ}(x). Hence

        TPR ≤ 1 − f_{ε,δ}(x) = min(1, δ + e^ε x, 1 − e^{−ε}(1 − δ − x)),

    which is always ≥ 0 for x, δ in [0, 1].
    """
    x = _rate("fpr", fpr)
    eps = _nonnegative("epsilon", epsilon)
    d = _delta_closed(delta)
    # δ + e^ε·x, computed without overflow (anything above 1 is cut to 1 anyway).
    if x == 0.0:
        linear = d
    else:
        log_scaled = eps + math.log(x)
        linear = d + math.exp(log_scaled) if log_scaled < 1.0 else math.inf
    other = 1.0 - math.exp(-eps) * (1.0 - d - x)
    return max(0.0, min(1.0, linear, other))


# --- Gaussian differential privacy ------------------------------------------------------------


def gdp_mu_from_rates(fpr: float, fnr: float) -> float:
    """The μ whose GDP trade-off curve passes through (FPR, FNR).

    For μ-GDP the trade-off is f_μ(α) = Φ(Φ^{-1}(1 − α) − μ)
    (Dong, Roth & Su), so a test with rates (α, β) needs

        μ = Φ^{-1}(1 − α) − Φ^{-1}(β) = −Φ^{-1}(α) − Φ^{-1}(β),

    evaluated in the second form so that small rates keep full precision.
    Points with α + β ≥ 1 (no better than guessing) return 0; a zero rate with
    the other below 1 returns ``inf`` (perfect separation at that threshold).
    """
    alpha = _rate("fpr", fpr)
    beta = _rate("fnr", fnr)
    if alpha + beta >= 1.0:
        return 0.0
    return max(0.0, -float(ndtri(alpha)) - float(ndtri(beta)))


def gdp_mu_from_normals(mean_a: float, mean_b: float, sd: float) -> float:
    """μ = |m_a − m_b| / sd for two Normal score distributions with a common sd.

    Thresholding N(m_a, sd²) against N(m_b, sd²) has exactly the trade-off
    curve of N(0, 1) against N(μ, 1) (Dong, Roth & Su); for
    unequal variances this is only an approximation.
    """
    a = _finite("mean_a", mean_a)
    b = _finite("mean_b", mean_b)
    scale = _positive("sd", sd)
    return abs(a - b) / scale


def _gdp_log_delta(epsilon: float, mu: float) -> float:
    """log δ_μ(ε) for μ > 0 and ε ≥ 0 (see :func:`gdp_delta`).

    With u = μ/2 − ε/μ and v = u − μ the identity Φ(y) = ½·erfcx(−y/√2)·e^{−y²/2},
    together with ε − v²/2 = −u²/2, gives

        u ≤ 0:  δ = ½ e^{−u²/2} [erfcx(−u/√2) − erfcx(−v/√2)]
        u > 0:  δ = 1 − ½ e^{−u²/2} [erfcx(u/√2) + erfcx(−v/√2)]

    with every erfcx argument ≥ 0 (no overflow) and the huge factors e^ε and
    e^{−u²/2} cancelled analytically. For u > 0 and ε ≤ 1 (which covers tiny μ)
    the form δ = [Φ(u) − Φ(v)] − (e^ε − 1)·Φ(v) avoids subtracting from 1.
    """
    u = mu / 2.0 - epsilon / mu
    z_v = (mu - u) / _SQRT2  # −v/√2 > 0
    half_u_sq = 0.5 * u * u
    if u <= 0.0:
        gap = float(erfcx(-u / _SQRT2)) - float(erfcx(z_v))
        if gap <= 0.0:
            return -math.inf
        return -half_u_sq - _LOG2 + math.log(gap)
    if epsilon <= 1.0:
        # δ = [Φ(u) − Φ(v)] − (e^ε − 1)Φ(v): no cancellation even when μ is tiny.
        gap = 0.5 * (float(erf(u / _SQRT2)) + float(erf(z_v)))
        value = gap - 0.5 * float(erfc(z_v)) * math.expm1(epsilon)
        return math.log(value) if value > 0.0 else -math.inf
    # Here μ > √2 and δ > 0.28, so the subtraction from 1 is harmless.
    tail = 0.5 * math.exp(-half_u_sq) * (float(erfcx(u / _SQRT2)) + float(erfcx(z_v)))
    return math.log1p(-tail) if tail < 1.0 else -math.inf


def gdp_delta(epsilon: float, mu: float) -> float:
    """The δ(ε) of a μ-GDP mechanism: δ = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2).

    A corollary of Prop. 2.12 in Dong, Roth & Su: μ-GDP implies
    (ε, δ(ε))-DP for every ε ≥ 0, and δ(ε) is the smallest such δ. Evaluated
    through scaled complementary error functions (see ``_gdp_log_delta``), so
    it stays accurate for large ε and tiny δ (1e-12 and far below, until
    underflow): relative error about 1e-16·(1 + ε/μ²), i.e. ≲ 1e-11 for
    μ ≥ 1e-3. μ = 0 gives 0.
    """
    eps = _nonnegative("epsilon", epsilon)
    m = _nonnegative("mu", mu)
    if m == 0.0:
        return 0.0
    return math.exp(_gdp_log_delta(eps, m))


def gdp_epsilon(delta: float, mu: float) -> float:
    """The ε ≥ 0 with δ_μ(ε) = δ for a μ-GDP mechanism, δ in (0, 1).

    Inverts :func:`gdp_delta` with Brent's method on log δ_μ(ε) − log δ, which
    is smooth and well scaled even for tiny δ. Returns 0 when δ ≥ δ_μ(0) =
    2Φ(μ/2) − 1 (including μ = 0), since then (0, δ)-DP already holds, and
    ``inf`` only if the answer overflows a float.
    """
    d = _delta_open(delta)
    m = _nonnegative("mu", mu)
    if m == 0.0:
        return 0.0
    target = math.log(d)

    def excess(eps: float) -> float:
        return _gdp_log_delta(eps, m) - target

    if excess(0.0) <= 0.0:
        return 0.0
    high = max(1.0, m * m)
    while excess(high) > 0.0:
        high *= 2.0
        if not math.isfinite(high):
            return math.inf
    root = brentq(excess, 0.0, high, xtol=1e-15, rtol=4.0 * 2.220446049250313e-16, maxiter=500)
    return float(root)


def gdp_mu_lower_bound(
    false_positives: int,
    negatives: int,
    false_negatives: int,
    positives: int,
    confidence: float = 0.95,
) -> float:
    """Lower confidence bound on μ from an attack's error counts.

    μ⁻ = Φ^{-1}(1 − FPR⁺) − Φ^{-1}(FNR⁺), with FPR⁺, FNR⁺ the Clopper–Pearson
    upper bounds of false_positives/negatives and false_negatives/positives
    (:func:`epsstar.statistics.bounds.from_counts.clopper_pearson_upper`); both hold jointly with
    probability ≥ ``confidence`` by the union bound. Because
    Φ^{-1}(1 − α) − Φ^{-1}(β) decreases in both α and β, upper bounds on both
    error rates are what a lower bound on μ needs. Taking the lower bound β⁻ of the second
    rate instead, as the formula is sometimes written, would overstate μ⁻; this function uses
    the statistically valid upper bound.
    """
    fp, n_neg, fn, n_pos = _check_error_counts(
        false_positives, negatives, false_negatives, positives
    )
    level = check_confidence(confidence)
    fpr_upper = clopper_pearson_upper(fp, n_neg, level)
    fnr_upper = clopper_pearson_upper(fn, n_pos, level)
    return gdp_mu_from_rates(fpr_upper, fnr_upper)


# --- Bayes security of DP-SGD (Cherubin et al.) -----------------------------------------------


@dataclass(frozen=True, slots=True)
class BayesSecurity:
    """Closed-form approximation of the Bayes security of DP-SGD against membership inference.

    ``beta_closed_form`` is the leading term of Corollary 7, which omits an
    error of order ``error_order`` = sqrt(pT)/σ whose constant the paper does
    not give; it is therefore an approximation, not a bound, and lies above
    the exact β* (from the privacy loss distribution) where the error term
    matters: the paper advises against it for σ < 1 (§4.1).
    ``advantage_closed_form`` = 1 − ``beta_closed_form``.
    """

    beta_closed_form: float
    error_order: float
    advantage_closed_form: float
    neighbouring: str


def bayes_security_dpsgd(
    sampling_rate: float,
    steps: int,
    noise_multiplier: float,
    neighbouring: str = "substitution",
) -> BayesSecurity:
    """Leading term of the Bayes security β* of DP-SGD (Corollary 7, Cherubin et al.).

    Cherubin et al.: β* ≥ 1 − erf(p·sqrt(T) / (√2·σ)) − O(sqrt(pT)/σ) for the substitution
    relation (two clipped gradients may point in opposite directions, so the
    sensitivity is 2C); add/remove halves the sensitivity and gives
    1 − erf(p·sqrt(T) / (2√2·σ)). Here p is the sampling rate, T the number of
    steps and σ the noise multiplier. The O(·) term is dropped, so the result
    is an approximation, not a bound; it is computed with erfc, so β* near 0
    keeps its relative precision. For the exact value
    use :func:`bayes_security_from_delta_at_zero` on δ(0) of the mechanism's
    privacy loss distribution.
    """
    p = check_in_range("sampling_rate", sampling_rate, 0.0, 1.0, high_inclusive=True)
    t = check_positive_int("steps", steps, minimum=1)
    sigma = _positive("noise_multiplier", noise_multiplier)
    if neighbouring not in NEIGHBOURING_RELATIONS:
        allowed = ", ".join(repr(name) for name in NEIGHBOURING_RELATIONS)
        raise InvalidInputError(f"neighbouring must be one of {allowed}. Found {neighbouring!r}.")
    scale = _SQRT2 * sigma if neighbouring == "substitution" else 2.0 * _SQRT2 * sigma
    argument = p * math.sqrt(t) / scale
    return BayesSecurity(
        beta_closed_form=float(erfc(argument)),
        error_order=math.sqrt(p * t) / sigma,
        advantage_closed_form=float(erf(argument)),
        neighbouring=neighbouring,
    )


def bayes_security_from_delta_at_zero(delta_at_zero: float) -> float:
    """β* = 1 − δ(0) for a mechanism whose privacy profile has δ(ε = 0) = ``delta_at_zero``.

    δ(0) is the total variation distance between the outputs on neighbouring
    inputs, which is the advantage sup over tests (TPR − FPR) of the best
    attack (Proposition 8 of Cherubin et al.).
    An upper bound on δ(0), such as a pessimistic privacy loss distribution
    gives, yields a lower bound on β*.
    """
    return 1.0 - _rate("delta_at_zero", delta_at_zero)


def tpr_bound_bayes_security(fpr: float, beta: float) -> float:
    """TPR ≤ min(1, 1 + FPR − β*) for a β*-secure mechanism.

    Proposition 9 of Cherubin et al., for a prior
    probability of membership ≤ 1/2 (equality at the uniform prior).
    """
    x = _rate("fpr", fpr)
    b = _rate("beta", beta)
    return min(1.0, 1.0 + x - b)
