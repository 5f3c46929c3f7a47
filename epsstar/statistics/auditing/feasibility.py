"""The smallest audit that could refute a claim: canaries for one run, runs for many.

An audit can refute a claimed ε only if its bound can exceed ε, and no bound exceeds what
perfect guesses give. These functions find the smallest number of canaries (one run, every
canary guessed and every guess right) or of evaluation runs per arm (many runs, no error
either way) whose bound exceeds the claim at the confidence, so that a hopeless audit is
refused before anything is trained.

* One run, (ε, δ) (Steinke et al. 2023): the smallest m with p(ε) < 1 − confidence for
  v = r = m (:func:`~.one_run.approximate_dp.one_run_p_value`). With δ = 0 this is the
  closed form m > log(1 − c)/log(e^ε/(1 + e^ε)); δ > 0 only adds to the p-value, and when
  2δ ≥ 1 − c no m can do.
* One run, μ-GDP (Mahloujifar et al. 2024): the smallest m whose recursion refutes
  μ = :func:`~.claims.claimed_mu` (ε, δ) for v = r = m.
* Many runs (Nasr et al. 2021, eq. 5; the μ-GDP bound of Nasr et al. 2023, "Tight Auditing of
  Differentially Private Machine Learning"): the smallest R with 0 false positives out of R and 0
  false negatives out of R whose Clopper–Pearson bound
  (:func:`~epsstar.statistics.bounds.from_counts.epsilon_lower_bound`), or whose μ⁻
  (:func:`~epsstar.statistics.readings.conversions.gdp_mu_lower_bound`) against the claim's μ,
  exceeds the claim. The many-run audit chooses its threshold on half the runs, so it needs about
  twice R runs per arm.

The searches double an upper end and then bisect, relying on the bound growing with the
number of canaries or runs (true of perfect guesses; the tests check each answer's
neighbour below).

After a one-run audit that did not refute, :func:`canaries_at_precision` projects the same
question onto the guesses it made: the fewest canaries with which the same share of them
guessed, right at the precision these guesses had, would refute the claim. It is a
projection, not a bound: the precision is itself measured on one run, and a larger audit
keeps it only if the trainer treats its canaries alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from epsstar.exceptions import InsufficientDataError, InvalidInputError
from epsstar.plumbing.records.json_records import JsonRecord
from epsstar.statistics._validation import (
    check_confidence,
    check_delta,
    check_in_range,
    check_positive_int,
)
from epsstar.statistics.auditing._checks import check_claimed_epsilon, check_method
from epsstar.statistics.auditing.claims import claimed_mu
from epsstar.statistics.auditing.one_run.approximate_dp import one_run_p_value
from epsstar.statistics.auditing.one_run.bounds import ONE_RUN_METHODS, OneRunMethod
from epsstar.statistics.auditing.one_run.gaussian_dp import one_run_gdp_refutation_margin
from epsstar.statistics.bounds.from_counts import epsilon_lower_bound
from epsstar.statistics.readings.conversions import gdp_mu_lower_bound

__all__ = [
    "MANY_RUN_FEASIBILITY_METHODS",
    "PROJECTED_LARGEST",
    "CanaryProjection",
    "ManyRunMethod",
    "canaries_at_precision",
    "check_canaries_can_refute",
    "check_runs_can_refute",
    "smallest_canary_count",
    "smallest_run_count",
]

ManyRunMethod = Literal["clopper_pearson", "gdp_clopper_pearson"]
MANY_RUN_FEASIBILITY_METHODS: tuple[ManyRunMethod, ...] = ("clopper_pearson", "gdp_clopper_pearson")

#: No audit is searched beyond this size (2⁴⁰ ≈ 1.1e12 canaries or runs).
_LARGEST = 2**40
#: No projection is searched beyond this many canaries (each step evaluates a bound).
PROJECTED_LARGEST = 10_000_000


def _smallest(refutes: Callable[[int], bool], start: int, largest: int = _LARGEST) -> int | None:
    """The smallest n ≥ 1 with ``refutes(n)``, for ``refutes`` false then true as n grows;
    ``None`` when even n = ``largest`` (2⁴⁰ by default) does not refute."""
    high = max(1, start)
    while not refutes(high):
        if high >= largest:
            return None
        high = min(2 * high, largest)
    # refutes(low) is false: the previous upper end, or just below a start known to fall short.
    low = high // 2 if high > start else max(0, start - 1)
    while high - low > 1:
        middle = (low + high) // 2
        if refutes(middle):
            high = middle
        else:
            low = middle
    return high


def _found(count: int | None, what: str, method: str, eps: float, delta: float) -> int:
    """``count``, or a one-line error when no audit size refutes the claim."""
    if count is None:
        raise InvalidInputError(
            f"no number of {what} lets {method} refute the claim at this confidence (with δ > 0 "
            f"the one-run (ε, δ) bound stops growing once 2δ(1 + e^ε) nears 1 − confidence). "
            f"Found ε = {eps:g}, δ = {delta:g}."
        )
    return count


def _smallest_canaries_epsilon_delta(eps: float, delta: float, level: float) -> int | None:
    """The smallest m whose perfect one-run count rejects (ε, δ)-DP (Steinke et al. 2023).

    p(m) = q^m + (δ term): q^m < 1 − c needs m ≥ m₀ = ⌊log(1 − c)/log q⌋ + 1, and past a few
    times m₀ the first term is negligible while the δ term 2mδ·max_i(…) only grows with m.
    So p is scanned on a geometric grid from m₀ to 64·m₀ (ratio 2^{1/8}); if no grid point
    rejects, ``None`` (a window narrower than the grid's 9 % steps could be missed: such a
    claim sits at the edge of what any number of canaries can refute). Otherwise the first
    m < the first rejecting grid point is found by bisection, p falling on that stretch.
    """
    log_q = -math.log1p(math.exp(-eps))
    start = math.floor(math.log(level) / log_q) + 1
    grid = np.unique(np.round(start * 2.0 ** (np.arange(49) / 8.0)).astype(np.int64))
    for m in grid:
        if one_run_p_value(int(m), int(m), int(m), eps, delta) < level:
            first = int(m)
            break
    else:
        return None
    low, high = start - 1, first  # q^(start − 1) ≥ 1 − c: start − 1 does not reject
    while high - low > 1:
        middle = (low + high) // 2
        if one_run_p_value(middle, middle, middle, eps, delta) < level:
            high = middle
        else:
            low = middle
    return high


def smallest_canary_count(
    claimed_epsilon: float,
    delta: float,
    *,
    confidence: float = 0.95,
    method: OneRunMethod = "steinke2023_epsilon_delta",
) -> int:
    """The fewest canaries whose one-run bound, with every guess right, exceeds the claim.

    See the module. δ may be 0 for the (ε, δ) method; the μ-GDP method needs δ in (0, 0.5)
    to name the claim's μ.
    """
    eps = check_claimed_epsilon(claimed_epsilon)
    level = 1.0 - check_confidence(confidence)
    check_method(method, ONE_RUN_METHODS)
    d = check_delta(delta, allow_zero=method == "steinke2023_epsilon_delta")
    if method == "steinke2023_epsilon_delta":
        return _found(_smallest_canaries_epsilon_delta(eps, d, level), "canaries", method, eps, d)
    mu = claimed_mu(eps, d)
    count = _smallest(lambda m: one_run_gdp_refutation_margin(m, m, m, mu, 1.0 - level) > 0.0, 1)
    return _found(count, "canaries", method, eps, d)


def smallest_run_count(
    claimed_epsilon: float,
    delta: float,
    *,
    confidence: float = 0.95,
    method: ManyRunMethod = "clopper_pearson",
) -> int:
    """The fewest evaluation runs per arm whose error-free many-run bound exceeds the claim.

    See the module. δ may be 0 for the Clopper–Pearson method; the μ-GDP method needs δ in
    (0, 0.5) to name the claim's μ.
    """
    eps = check_claimed_epsilon(claimed_epsilon)
    level = check_confidence(confidence)
    check_method(method, MANY_RUN_FEASIBILITY_METHODS)
    d = check_delta(delta, allow_zero=method == "clopper_pearson")
    if method == "clopper_pearson":
        count = _smallest(
            lambda n: epsilon_lower_bound(0, n, 0, n, delta=d, confidence=level).epsilon > eps, 1
        )
        return _found(count, "runs", method, eps, d)
    mu = claimed_mu(eps, d)
    count = _smallest(lambda n: gdp_mu_lower_bound(0, n, 0, n, level) > mu, 1)
    return _found(count, "runs", method, eps, d)


def check_canaries_can_refute(
    canaries: int,
    claimed_epsilon: float,
    delta: float,
    *,
    confidence: float = 0.95,
    method: OneRunMethod = "steinke2023_epsilon_delta",
) -> None:
    """Refuse, in one line, a one-run audit with too few canaries to refute the claim."""
    m = check_positive_int("canaries", canaries, minimum=1)
    needed = smallest_canary_count(claimed_epsilon, delta, confidence=confidence, method=method)
    if m < needed:
        raise InsufficientDataError(
            f"canaries are too few to refute ε = {claimed_epsilon:g} (δ = {delta:g}) at "
            f"{confidence:.3g} confidence with {method} even if every guess is right: at "
            f"least {needed} are needed. Found {m}."
        )


def check_runs_can_refute(
    runs_per_arm: int,
    claimed_epsilon: float,
    delta: float,
    *,
    confidence: float = 0.95,
    method: ManyRunMethod = "clopper_pearson",
) -> None:
    """Refuse, in one line, a many-run audit with too few evaluation runs per arm."""
    n = check_positive_int("runs_per_arm", runs_per_arm, minimum=1)
    needed = smallest_run_count(claimed_epsilon, delta, confidence=confidence, method=method)
    if n < needed:
        raise InsufficientDataError(
            f"runs_per_arm are too few to refute ε = {claimed_epsilon:g} (δ = {delta:g}) at "
            f"{confidence:.3g} confidence with {method} even with no error: at least "
            f"{needed} evaluation runs per arm are needed. Found {n}."
        )


@dataclass(frozen=True, slots=True)
class CanaryProjection(JsonRecord):
    """What a one-run audit that did not refute would have needed (see the module):
    ``canaries`` (``None`` when not even :data:`PROJECTED_LARGEST` would do) with the share
    ``share_guessed`` of them guessed, right at ``precision``; for the (ε, δ) bound,
    ``canaries_at_zero_delta`` is the same projection with δ = 0. Where ``canaries`` is
    ``None`` and it is not, the δ term of the bound, which grows with the canaries, is what
    stops a larger audit, not the precision of the guesses."""

    precision: float
    share_guessed: float
    canaries: int | None
    canaries_at_zero_delta: int | None = None


def canaries_at_precision(
    precision: float,
    share_guessed: float,
    claimed_epsilon: float,
    delta: float,
    *,
    confidence: float = 0.95,
    method: OneRunMethod = "steinke2023_epsilon_delta",
) -> CanaryProjection:
    """The fewest canaries m with which r = max(1, round(share·m)) guesses, ⌊precision·r⌋ of
    them right, make ``method``'s one-run bound exceed the claim (see the module); for the
    (ε, δ) bound also the fewest at δ = 0, which tells a δ too large to refute from guesses
    too imprecise."""
    p = check_in_range("precision", precision, 0.0, 1.0, low_inclusive=True, high_inclusive=True)
    share = check_in_range("share_guessed", share_guessed, 0.0, 1.0, high_inclusive=True)
    eps = check_claimed_epsilon(claimed_epsilon)
    level = check_confidence(confidence)
    check_method(method, ONE_RUN_METHODS)
    d = check_delta(delta, allow_zero=method == "steinke2023_epsilon_delta")
    mu = claimed_mu(eps, d) if method != "steinke2023_epsilon_delta" else 0.0

    def refutes(m: int, at_delta: float = d) -> bool:
        guesses = min(m, max(1, round(share * m)))
        correct = math.floor(p * guesses)
        if method == "steinke2023_epsilon_delta":
            return one_run_p_value(m, guesses, correct, eps, at_delta) < 1.0 - level
        return one_run_gdp_refutation_margin(m, guesses, correct, mu, level) > 0.0

    canaries = _smallest(refutes, 1, PROJECTED_LARGEST)
    at_zero = None
    if method == "steinke2023_epsilon_delta":
        at_zero = (
            canaries if d == 0.0 else _smallest(lambda m: refutes(m, 0.0), 1, PROJECTED_LARGEST)
        )
    return CanaryProjection(p, share, canaries, at_zero)
