"""Choosing k for a one-run audit without peeking: from the canary count and the claim alone.

The one-run bounds hold for a guessing rule fixed before the scores are seen; taking the k
that gives the largest bound on the observed scores would test many rules and keep the
best, which voids the confidence. So k is chosen from m and the claimed (ε, δ) alone:

* Model the audit of a trainer that exactly meets its claim as Gaussian: a canary's score is
  N(μ, 1) when included and N(0, 1) when not, with μ = :func:`~.claims.claimed_mu` (ε, δ) —
  the claim's own μ-GDP curve, which DP-SGD approaches (Dong, Roth & Su 2022, "Gaussian
  Differential Privacy").
* With k₊ = k₋ = k (``sides=2``), the rule guesses above the threshold t where
  ½[Φ̄(t − μ) + Φ̄(t)] = k/m (and symmetrically below), so its expected precision is
  Φ̄(t − μ)/(Φ̄(t − μ) + Φ̄(t)) and its expected number of right guesses among r = 2k is
  v(k) = round(2k·precision). A one-sided rule (``sides=1``: "in" for the top k only, or
  "out" for the bottom k only) has the same precision, by the model's symmetry, over r = k
  guesses: v(k) = round(k·precision). Each rule gets its own k.
* Compute the bound that v(k) would give, and keep the k that maximises it (the smallest
  such k on ties): the k with which an audit comes closest to refuting the claim when the
  trainer is at the claim, hence the most power against a trainer that leaks more.
* When no k is expected to give a bound above 0 at the claim (few canaries for the claim and
  the confidence: every k ties at 0, and the smallest, k = 1, could never refute anything),
  the search is made again against the Gaussian trainer with μ doubled, up to
  :data:`_DOUBLINGS` times, until some k is: the k with most power against a trainer that
  leaks 2, 4, ... times the claim's μ. Still m and the claim alone.

:func:`given_k` records a k fixed in advance by the audit's design instead (say k = m/2, every
canary guessed), with what it is expected to give at the claim: the bounds hold for any k fixed
before the scores are seen. The rule above aims at a trainer near its claim; a design that
must refute a claim far above what few guesses can show (the one-run bound with 2k guesses all
right is the most an audit can give) fixes a larger k.

Candidate k are every k ≤ m/2 when m ≤ 512, else 128 values spaced geometrically from 1 to
m/2. With every guess equally good (randomized response) the rule would be k = m/2; the
Gaussian model prefers fewer, surer guesses, as the canaries' extreme scores are.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit, log_ndtr

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.json_records import JsonRecord
from epsstar.statistics._validation import check_confidence, check_in_range, check_positive_int
from epsstar.statistics.auditing._checks import check_claimed_epsilon, check_method
from epsstar.statistics.auditing.claims import claimed_mu
from epsstar.statistics.auditing.one_run.approximate_dp import one_run_epsilon_lower_bound
from epsstar.statistics.auditing.one_run.bounds import ONE_RUN_METHODS, OneRunMethod
from epsstar.statistics.auditing.one_run.gaussian_dp import one_run_mu_lower_bound
from epsstar.statistics.readings.conversions import gdp_epsilon

__all__ = ["ChosenK", "choose_k", "expected_precision", "given_k"]

_ALL_K_UP_TO = 256
_GRID_SIZE = 128
#: Times μ is doubled, at most, when no k is expected to give a bound above 0 at the claim.
_DOUBLINGS = 6


@dataclass(frozen=True, slots=True)
class ChosenK(JsonRecord):
    """The k chosen for ``canaries`` and the claim, and what it is expected to give there.

    ``expected_correct`` of the ``sides·k`` guesses (``sides`` 2: k "in" and k "out"; 1: k on
    one side) are expected right for a Gaussian trainer
    with ``mu`` — the claim's μ, or a multiple of it when no k is expected to give a bound
    above 0 at the claim (see the module) — which would give the bound
    ``expected_epsilon_lower`` (``method``'s bound, in ε at ``delta``).
    """

    k: int
    canaries: int
    claimed_epsilon: float
    delta: float
    confidence: float
    method: str
    expected_correct: int
    expected_epsilon_lower: float
    mu: float
    sides: int = 2


def expected_precision(canaries: int, k: int, mu: float) -> float:
    """The expected share of right guesses of the k₊ = k₋ = k rule under the Gaussian model.

    Scores N(μ, 1) for included canaries, N(0, 1) for the others, each included with
    probability ½. The top k lie above t with ½[Φ̄(t − μ) + Φ̄(t)] = k/m, and a score above
    t belongs to an included canary with probability Φ̄(t − μ)/(Φ̄(t − μ) + Φ̄(t)); by the
    symmetry of the model the bottom k are as precise. Solved in logs so that k ≪ m works.
    """
    m = check_positive_int("canaries", canaries, minimum=2)
    kk = check_positive_int("k", k, minimum=1)
    if 2 * kk > m:
        raise InvalidInputError(f"k must be at most half the canaries ({m // 2}). Found {kk}.")
    shift = check_in_range("mu", mu, 0.0, math.inf, low_inclusive=True)
    target = math.log(kk / m)

    def excess(t: float) -> float:
        above = np.logaddexp(log_ndtr(shift - t), log_ndtr(-t)) - math.log(2.0)
        return float(above) - target

    t = float(brentq(excess, -60.0, 60.0 + shift, xtol=1e-12))
    return float(expit(float(log_ndtr(shift - t)) - float(log_ndtr(-t))))


def _candidates(half: int) -> list[int]:
    if half <= _ALL_K_UP_TO:
        return list(range(1, half + 1))
    grid = np.unique(np.round(np.geomspace(1.0, half, _GRID_SIZE)).astype(np.int64))
    return [int(k) for k in grid]


def _expected_bound(
    method: OneRunMethod, m: int, guesses: int, correct: int, delta: float, level: float
) -> float:
    if method == "steinke2023_epsilon_delta":
        return one_run_epsilon_lower_bound(m, guesses, correct, delta=delta, confidence=level)
    return gdp_epsilon(delta, one_run_mu_lower_bound(m, guesses, correct, confidence=level))


def _expected_correct(m: int, k: int, mu: float, sides: int) -> int:
    """Right guesses expected among the ``sides·k`` guesses under the Gaussian model."""
    return min(sides * k, round(sides * k * expected_precision(m, k, mu)))


def _check_sides(sides: int) -> int:
    if sides not in (1, 2):
        raise InvalidInputError(f"sides must be 1 or 2. Found {sides!r}.")
    return sides


def _best_k(
    method: OneRunMethod, m: int, mu: float, delta: float, level: float, sides: int
) -> tuple[float, int, int]:
    """(expected bound, k, expected right guesses) of the k that maximises the bound expected
    for a Gaussian trainer with ``mu`` (the smallest such k on ties)."""
    best: tuple[float, int, int] = (-1.0, 0, 0)
    for k in _candidates(m // 2):
        correct = _expected_correct(m, k, mu, sides)
        bound = _expected_bound(method, m, sides * k, correct, delta, level)
        if bound > best[0]:
            best = (bound, k, correct)
    return best


def _checked_design(
    canaries: int, claimed_epsilon: float, delta: float, confidence: float, method: str
) -> tuple[int, float, float, float]:
    """(m, ε, δ, confidence) of a one-run design: m ≥ 2 canaries, a claimed ε, δ in (0, 0.5),
    and a bound the audit can report (one of :data:`~.bounds.ONE_RUN_METHODS`)."""
    m = check_positive_int("canaries", canaries, minimum=2)
    eps = check_claimed_epsilon(claimed_epsilon)
    d = check_in_range("delta", delta, 0.0, 0.5)
    level = check_confidence(confidence)
    check_method(method, ONE_RUN_METHODS)
    return m, eps, d, level


def choose_k(
    canaries: int,
    claimed_epsilon: float,
    delta: float,
    *,
    confidence: float = 0.95,
    method: OneRunMethod = "steinke2023_epsilon_delta",
    sides: int = 2,
) -> ChosenK:
    """The k that maximises the bound expected at the claim (see the module): k₊ = k₋ = k
    with ``sides=2``, k guesses on one side with ``sides=1``.

    Reads nothing but m, the claimed (ε, δ) with δ in (0, 0.5), the confidence, which
    bound (``method``, one of :data:`~.bounds.ONE_RUN_METHODS`) the audit will report and
    the rule's number of sides.
    """
    m, eps, d, level = _checked_design(canaries, claimed_epsilon, delta, confidence, method)
    return _chosen(m, eps, d, level, method, _check_sides(sides))


@functools.lru_cache(maxsize=64)
def _chosen(
    m: int, eps: float, d: float, level: float, method: OneRunMethod, sides: int
) -> ChosenK:
    """:func:`choose_k` on checked arguments, remembered: the search costs about a second
    (hundreds of bounds, each a root search), and the threat models of one audit that share a
    canary count and the claim ask for the same k."""
    mu = claimed_mu(eps, d)
    for _ in range(_DOUBLINGS + 1):
        bound, k, correct = _best_k(method, m, mu, d, level, sides)
        if bound > 0.0:
            break
        mu *= 2.0
    return ChosenK(
        k=k,
        canaries=m,
        claimed_epsilon=eps,
        delta=d,
        confidence=level,
        method=method,
        expected_correct=correct,
        expected_epsilon_lower=bound,
        mu=mu,
        sides=sides,
    )


def given_k(
    canaries: int,
    k: int,
    claimed_epsilon: float,
    delta: float,
    *,
    confidence: float = 0.95,
    method: OneRunMethod = "steinke2023_epsilon_delta",
    sides: int = 2,
) -> ChosenK:
    """The record of a k fixed by the audit's design (1 ≤ k ≤ m/2), with the right guesses and
    the bound expected for a Gaussian trainer exactly at the claim (see the module)."""
    m, eps, d, level = _checked_design(canaries, claimed_epsilon, delta, confidence, method)
    kk = check_positive_int("k", k, minimum=1)
    if 2 * kk > m:
        raise InvalidInputError(f"k must be at most half the canaries ({m // 2}). Found {kk}.")
    n_sides = _check_sides(sides)
    mu = claimed_mu(eps, d)
    correct = _expected_correct(m, kk, mu, n_sides)
    return ChosenK(
        k=kk,
        canaries=m,
        claimed_epsilon=eps,
        delta=d,
        confidence=level,
        method=method,
        expected_correct=correct,
        expected_epsilon_lower=_expected_bound(method, m, n_sides * kk, correct, d, level),
        mu=mu,
        sides=n_sides,
    )
