"""The (ε, δ) lower bound of a one-run audit (Steinke, Nasr & Jagielski 2023).

"Privacy Auditing with One (1) Training Run" (NeurIPS 2023, arXiv 2305.08846): m canaries are each
included in the training set independently with probability ½, the model is trained once, and an
auditor who sees only the trained model guesses "in" or "out" for r of them and abstains on the
rest. If training is (ε, δ)-DP, the number W of correct guesses satisfies, for every v,

    P[W ≥ v] ≤ P[B ≥ v] + 2mδ · max_{1≤i≤v} (1/i) · P[v − i ≤ B ≤ v − 1],
    B ~ Binomial(r, q),  q = e^ε / (1 + e^ε),

which for δ = 0 is the tail of the randomized-response guesser: an ε-DP trainer can do no
better than r independent guesses each right with probability q. The statement of the δ
term is taken from the paper's theorem as its authors' own code snippet computes it (ML
Privacy Meter's ``p_value_DP_audit`` quotes it as "taken from" the paper) and as jax_privacy's
``auditing._one_run_p_value`` computes it independently; the paper itself is not in the
project's papers, so the formula was reconstructed from those two implementations and the
paper's abstract, and the values agree with both (``tests/statistics/auditing``).

The right-hand side is a p-value for the claim "(ε, δ)-DP"; the lower bound is the largest
ε it rejects at level 1 − confidence. A trainer that is (ε, δ)-DP is (ε', δ)-DP for every
ε' ≥ ε, so the claims are nested and that largest rejected ε is a valid lower bound even
where the p-value is not monotone in ε.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import bdtrc, betaln, expit, xlog1py, xlogy

from epsstar.statistics._validation import check_confidence, check_delta, check_in_range
from epsstar.statistics.auditing._checks import check_guess_counts

__all__ = ["one_run_epsilon_lower_bound", "one_run_p_value"]

#: Width, in standard deviations (plus as many counts), of the binomial's lower tail kept in
#: the δ term; the mass left out is below e^{-60} by Bernstein's inequality.
_TAIL_WIDTH = 40.0


def _delta_factor(trials: int, correct: int, q: float) -> float:
    """max_{1≤i≤v} (1/i)·P[v − i ≤ B ≤ v − 1] for B ~ Binomial(r, q), v = ``correct`` ≥ 1.

    The window sums run downward from v − 1; below mean − 40·sd − 40 the binomial holds
    less than e^{-60} of its mass (Bernstein), and past the bulk the running sum only
    grows by that little while i keeps growing, so the window stops there: the maximum
    changes by less than e^{-60}/i, far below double precision of any p-value compared
    with a confidence level.
    """
    mean = trials * q
    spread = math.sqrt(trials * q * (1.0 - q))
    low = max(0, math.floor(mean - _TAIL_WIDTH * spread - _TAIL_WIDTH))
    if correct - 1 < low:
        low = 0
    below = np.arange(correct - 1, low - 1, -1)
    window = np.cumsum(_binomial_pmf(below, trials, q))
    return float(np.max(window / np.arange(1, below.size + 1)))


def _binomial_pmf(counts: np.ndarray, trials: int, q: float) -> np.ndarray:
    """P[B = j] for B ~ Binomial(r, q), from log C(r, j) = −log(r + 1) − log B(r − j + 1, j + 1).

    The scipy.special ufuncs directly (scipy.stats.binom.pmf gives the same values with a
    millisecond of argument handling per call, which the root searches repeat hundreds of
    times).
    """
    log_choose = -math.log(trials + 1.0) - betaln(trials - counts + 1.0, counts + 1.0)
    return np.exp(log_choose + xlogy(counts, q) + xlog1py(trials - counts, -q))


def _p_value(canaries: int, guesses: int, correct: int, epsilon: float, delta: float) -> float:
    """The theorem's bound on P[W ≥ correct] under (ε, δ)-DP (arguments checked)."""
    if correct == 0:
        return 1.0
    q = float(expit(epsilon))
    tail = float(bdtrc(correct - 1, guesses, q))  # P[B ≥ v] = P[B > v − 1]
    if delta == 0.0:
        return min(1.0, tail)
    return min(1.0, tail + 2.0 * canaries * delta * _delta_factor(guesses, correct, q))


def one_run_p_value(
    canaries: int, guesses: int, correct: int, epsilon: float, delta: float = 0.0
) -> float:
    """P-value of ``correct`` right guesses out of ``guesses`` (``canaries`` in all) under the
    claim "(ε, δ)-DP": the bound on P[W ≥ v] of Steinke et al. 2023 (see the module)."""
    m, r, v = check_guess_counts(canaries, guesses, correct)
    eps = check_in_range("epsilon", epsilon, 0.0, math.inf, low_inclusive=True)
    d = check_delta(delta, allow_zero=True)
    return _p_value(m, r, v, eps, d)


def one_run_epsilon_lower_bound(
    canaries: int,
    guesses: int,
    correct: int,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
) -> float:
    """The largest ε whose claim (ε, δ)-DP the one-run count rejects at ``confidence``.

    ε_lo = sup{ε ≥ 0 : p(ε) ≤ 1 − confidence} with p the bound of Steinke et al. 2023 (see
    the module); 0 when even ε = 0 is not rejected. With δ = 0 this is the pure-ε bound,
    the binomial test of randomized response. The root is found by doubling a bracket and
    Brent's method on p(ε) − (1 − confidence) (p increases in ε: a property test checks it).
    """
    m, r, v = check_guess_counts(canaries, guesses, correct)
    d = check_delta(delta, allow_zero=True)
    level = 1.0 - check_confidence(confidence)

    def excess(eps: float) -> float:
        return _p_value(m, r, v, eps, d) - level

    if excess(0.0) > 0.0:
        return 0.0
    low, high = 0.0, 1.0
    while excess(high) <= 0.0:
        low, high = high, 2.0 * high
    return float(brentq(excess, low, high, xtol=1e-12, rtol=1e-12, maxiter=500))
