"""The μ-GDP lower bound of a one-run audit (Mahloujifar, Melis & Chaudhuri 2024).

"Auditing f-Differential Privacy in One Run" (arXiv 2410.22235, ICML 2025) reads the same
count as Steinke, Nasr & Jagielski 2023, "Privacy Auditing with One (1) Training Run" — m
canaries, each included with probability ½, r guesses, v of them right — through a trade-off
curve f instead of (ε, δ). Here f is the μ-GDP curve of Dong, Roth & Su 2022, "Gaussian
Differential Privacy", f_μ(α) = Φ(Φ^{-1}(1 − α) − μ), whose inverse blow-up

    g_μ(t) = Φ(Φ^{-1}(t) − μ)

is the least probability of a wrong guess that μ-GDP allows beside a probability t of a right
one. The test of the claim "μ-GDP" at level τ = 1 − confidence supposes P[W ≥ v] ≥ τ and
follows the least mass of right guesses (ρ) and wrong guesses (η), per canary, that f-DP then
forces on the events "at least i right", from i = v down to 0:

    ρ ← τ·v/m,  η ← τ·(r − v)/m;
    for i = v − 1, …, 0:  η' = max(η, g_μ(ρ)),  ρ ← ρ + i/(r − i)·(η' − η),  η ← η'

(an event with exactly i right out of r guesses carries right and wrong guesses in the ratio
i : (r − i)). If the forced total ρ + η exceeds r/m, the share of canaries guessed, the
supposition is impossible: P[W ≥ v] < τ and the claim is refuted. This is the paper's
``audit_rh_with_cap`` procedure for two-valued guesses; the paper is not in the project's
papers, so it was reconstructed from the two public implementations that cite it
(jax_privacy's ``_epsilon_one_run_fdp`` and Meta's PrivacyGuard ``FDPAnalysisNode``) and the
paper's abstract, and its results agree with jax_privacy's (``tests/statistics/auditing``).

The lower bound μ_lo is the largest refuted μ (μ-GDP claims are nested, as μ-GDP implies
μ'-GDP for μ' ≥ μ). Its (ε, δ) reading, ε = gdp_epsilon(δ, μ_lo)
(:func:`~epsstar.statistics.readings.conversions.gdp_epsilon`), is the ε at δ of the
strongest Gaussian trade-off curve the count refutes: a lower bound on ε for trainers whose
trade-off curve is Gaussian (the Gaussian mechanism, full-batch DP-SGD, and approximately
many-step DP-SGD by the central limit theorem of Dong, Roth & Su). For other curves only the μ
statement holds; the (ε, δ) bound of Steinke et al. holds for all.
"""

from __future__ import annotations

import math

from scipy.optimize import brentq
from scipy.special import ndtr, ndtri

from epsstar.statistics._validation import check_confidence, check_in_range
from epsstar.statistics.auditing._checks import check_guess_counts

__all__ = ["one_run_gdp_refutation_margin", "one_run_mu_lower_bound"]


def _margin(canaries: int, guesses: int, correct: int, mu: float, level: float) -> float:
    """ρ + η − r/m after the recursion (see the module); > 0 when μ-GDP is refuted.

    The loop stops early once η stops growing (nothing changes after that) or once the total
    exceeds r/m (both only grow, so the claim is refuted whatever follows).
    """
    total = guesses / canaries
    right = level * correct / canaries
    wrong = level * (guesses - correct) / canaries
    for i in range(correct - 1, -1, -1):
        needed = float(ndtr(float(ndtri(right)) - mu))
        if needed <= wrong:
            break
        right += i / (guesses - i) * (needed - wrong)
        wrong = needed
        if right + wrong > total:
            break
    return right + wrong - total


def one_run_gdp_refutation_margin(
    canaries: int, guesses: int, correct: int, mu: float, confidence: float = 0.95
) -> float:
    """ρ + η − r/m of the recursion of Mahloujifar et al. 2024 for the claim "μ-GDP".

    Positive when the count refutes the claim at ``confidence`` (see the module); its sign is
    what matters, its size past the refutation is not (the loop stops there).
    """
    m, r, v = check_guess_counts(canaries, guesses, correct)
    m_u = check_in_range("mu", mu, 0.0, math.inf, low_inclusive=True)
    level = 1.0 - check_confidence(confidence)
    return _margin(m, r, v, m_u, level)


def one_run_mu_lower_bound(
    canaries: int, guesses: int, correct: int, *, confidence: float = 0.95
) -> float:
    """The largest μ whose claim μ-GDP the one-run count refutes at ``confidence``.

    μ_lo = sup{μ ≥ 0 : the recursion of the module refutes μ-GDP}, 0 when μ = 0 is not
    refuted. A bracket is doubled from μ = 1 and Brent's method finds the sign change of
    the margin, to 1e-10.
    """
    m, r, v = check_guess_counts(canaries, guesses, correct)
    level = 1.0 - check_confidence(confidence)

    def margin(mu: float) -> float:
        return _margin(m, r, v, mu, level)

    if v == 0 or margin(0.0) <= 0.0:
        return 0.0
    low, high = 0.0, 1.0
    while margin(high) > 0.0:
        low, high = high, 2.0 * high
    return float(brentq(margin, low, high, xtol=1e-10, rtol=1e-12, maxiter=500))
