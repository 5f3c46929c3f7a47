"""Two more ε lower bounds from many-run error counts: a Bayesian one and the log-Katz one.

Two alternatives to bounding FPR and FNR separately with Clopper–Pearson:

* **Bayesian** (Zanella-Béguelin et al. 2023, "Bayesian Estimation of Differential Privacy"):
  put Beta priors on the
  false positive rate α and false negative rate β; with FP false positives out of N
  negatives and FN out of P positives the posteriors are independent,
  α ~ Beta(a + FP, b + N − FP) and β ~ Beta(a + FN, b + P − FN). The posterior of
  ε(α, β) = max(0, log((1 − δ − α)/β), log((1 − δ − β)/α)) is that of a joint region, and
  its (1 − confidence)-quantile is the credible lower bound:

      P(ε ≤ t | data) = P(β ≥ h_t(α)),  h_t(x) = max(1 − δ − e^t·x, e^{−t}(1 − δ − x)),

  computed as ∫₀¹ S_β(h_t(F_α^{-1}(u))) du (S the survival function, F^{-1} the quantile
  function; scipy's regularized incomplete beta functions) by adaptive quadrature, split
  where the two lines of h_t cross. A credible bound is a statement about the posterior, not
  a frequentist guarantee; with the uniform prior (a = b = 1, the default) and no errors the
  marginal bounds coincide with Clopper–Pearson's.
* **log-Katz**: bound log((1 − δ − β)/α) directly with the Katz log interval for a ratio of
  two binomial proportions. With p₁ the rate of the test's right calls on one side and p₂
  the rate of wrong calls on the other, each count and size increased by ½ (statsmodels'
  ``log-adjusted``), the delta method gives

      log((p₁ − δ)/p₂) ± z·sqrt(p₁(1 − p₁)/(n₁(p₁ − δ)²) + (1 − p₂)/(n₂ p₂)),

  which for δ = 0 is Katz's interval (statsmodels' ``confint_proportions_2indep`` with
  ``compare="ratio", method="log-adjusted"``; written out here because that function has no
  δ). It is an asymptotic interval: at small counts it can cover less than stated.

Both directions of the test are bounded, each at the upper end of a two-sided interval at
``confidence`` (as :func:`~epsstar.statistics.bounds.from_counts.epsilon_lower_bound` does), and
the larger kept, so both hold at once with probability ≥ confidence by the union bound.
"""

from __future__ import annotations

import math
import warnings

from scipy.integrate import IntegrationWarning, quad
from scipy.optimize import brentq
from scipy.special import betainc, betaincc, betaincinv, ndtri

from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import check_confidence, check_delta
from epsstar.statistics.bounds.from_counts import _check_error_counts

__all__ = ["bayesian_epsilon_lower_bound", "log_katz_epsilon_lower_bound", "posterior_epsilon_cdf"]


def _beta_parameters(count: int, total: int, prior: tuple[float, float]) -> tuple[float, float]:
    return prior[0] + count, prior[1] + total - count


def _check_prior(prior: tuple[float, float]) -> tuple[float, float]:
    a, b = (float(value) for value in prior)
    if not (math.isfinite(a) and math.isfinite(b) and a > 0.0 and b > 0.0):
        raise InvalidInputError(f"prior must be two positive numbers (a, b). Found {prior}.")
    return a, b


def posterior_epsilon_cdf(
    t: float,
    fpr_posterior: tuple[float, float],
    fnr_posterior: tuple[float, float],
    delta: float,
) -> float:
    """P(ε(α, β) ≤ t) for α ~ Beta(*fpr_posterior), β ~ Beta(*fnr_posterior), t ≥ 0
    (arguments unchecked: positive Beta parameters, δ in [0, 0.5)).

    The integral of the module, ∫₀¹ S_β(h_t(F_α^{-1}(u))) du, split at the u where the two
    lines of h_t cross, x* = (1 − δ)/(1 + e^t).
    """
    a_x, b_x = fpr_posterior
    a_y, b_y = fnr_posterior
    slope = math.exp(min(t, 700.0))

    def integrand(u: float) -> float:
        x = float(betaincinv(a_x, b_x, u))
        floor = max(1.0 - delta - slope * x, (1.0 - delta - x) / slope)
        if floor <= 0.0:
            return 1.0
        return float(betaincc(a_y, b_y, min(floor, 1.0)))

    crossing = (1.0 - delta) / (1.0 + slope)
    u_cross = float(betainc(a_x, b_x, crossing))
    pieces = [(0.0, u_cross), (u_cross, 1.0)]
    total = 0.0
    with warnings.catch_warnings():
        # quad reports "roundoff error" where S_β steps sharply; the values it returns there
        # agree with a 2·10^6-point midpoint rule to 1e-9 (tests/statistics/auditing).
        warnings.simplefilter("ignore", IntegrationWarning)
        for low, high in pieces:
            if high > low:
                value, _ = quad(integrand, low, high, limit=200, epsabs=1e-10, epsrel=1e-8)
                total += value
    return min(1.0, max(0.0, total))


def bayesian_epsilon_lower_bound(
    false_positives: int,
    negatives: int,
    false_negatives: int,
    positives: int,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
    prior: tuple[float, float] = (1.0, 1.0),
) -> float:
    """The (1 − confidence)-quantile of ε's posterior under Beta(``prior``) priors (module).

    0 when the posterior already puts at least 1 − confidence on ε = 0; otherwise the root
    of P(ε ≤ t | data) = 1 − confidence by Brent's method, after doubling a bracket.
    """
    fp, n_neg, fn, n_pos = _check_error_counts(
        false_positives, negatives, false_negatives, positives
    )
    d = check_delta(delta, allow_zero=True)
    level = 1.0 - check_confidence(confidence)
    beliefs = _check_prior(prior)
    fpr = _beta_parameters(fp, n_neg, beliefs)
    fnr = _beta_parameters(fn, n_pos, beliefs)

    def excess(t: float) -> float:
        return posterior_epsilon_cdf(t, fpr, fnr, d) - level

    if excess(0.0) >= 0.0:
        return 0.0
    low, high = 0.0, 1.0
    while excess(high) < 0.0:
        low, high = high, 2.0 * high
    return float(brentq(excess, low, high, xtol=1e-9, rtol=1e-10, maxiter=200))


def _katz_lower(
    right: int, right_total: int, wrong: int, wrong_total: int, delta: float, z: float
) -> float:
    """Lower end of the Katz interval of log((p₁ − δ)/p₂), counts adjusted by ½ (module)."""
    x1, n1 = right + 0.5, right_total + 0.5
    x2, n2 = wrong + 0.5, wrong_total + 0.5
    p1, p2 = x1 / n1, x2 / n2
    if p1 - delta <= 0.0:
        return 0.0
    variance = p1 * (1.0 - p1) / (n1 * (p1 - delta) ** 2) + (1.0 - p2) / (n2 * p2)
    return math.log(p1 - delta) - math.log(p2) - z * math.sqrt(variance)


def log_katz_epsilon_lower_bound(
    false_positives: int,
    negatives: int,
    false_negatives: int,
    positives: int,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
) -> float:
    """max(0, Katz lower bounds of log((1 − δ − FNR)/FPR) and log((1 − δ − FPR)/FNR)).

    Each bound is the lower end of the two-sided log-Katz interval at ``confidence`` (see the
    module); asymptotic, not exact.
    """
    fp, n_neg, fn, n_pos = _check_error_counts(
        false_positives, negatives, false_negatives, positives
    )
    d = check_delta(delta, allow_zero=True)
    z = -float(ndtri((1.0 - check_confidence(confidence)) / 2.0))
    members_called = _katz_lower(n_pos - fn, n_pos, fp, n_neg, d, z)
    others_called = _katz_lower(n_neg - fp, n_neg, fn, n_pos, d, z)
    return max(0.0, members_called, others_called)
