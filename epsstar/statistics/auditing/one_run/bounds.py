"""Both one-run bounds for one training run: the record the audit command writes.

The (ε, δ) bound of Steinke, Nasr & Jagielski 2023 (:mod:`.approximate_dp`) holds
for every (ε, δ)-DP trainer; the μ-GDP bound of Mahloujifar, Melis & Chaudhuri 2024
(:mod:`.gaussian_dp`) is tighter and refutes Gaussian trade-off curves. The record
reports both, from the same count of right guesses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from numpy.typing import ArrayLike

from epsstar.plumbing.records.json_records import JsonRecord, json_property
from epsstar.statistics._validation import check_confidence, check_delta
from epsstar.statistics.auditing._checks import check_claimed_epsilon, check_guess_counts
from epsstar.statistics.auditing.one_run.approximate_dp import one_run_epsilon_lower_bound
from epsstar.statistics.auditing.one_run.gaussian_dp import one_run_mu_lower_bound
from epsstar.statistics.auditing.one_run.guesses import GuessCounts, count_correct_guesses
from epsstar.statistics.bounds.held_out_bound import Direction
from epsstar.statistics.readings.conversions import gdp_epsilon

__all__ = ["ONE_RUN_METHODS", "OneRunBounds", "OneRunMethod", "audit_one_run", "one_run_bounds"]

OneRunMethod = Literal["steinke2023_epsilon_delta", "mahloujifar2024_gdp"]
#: The bounds of a one-run audit, in the order of the record's fields.
ONE_RUN_METHODS: tuple[OneRunMethod, OneRunMethod] = (
    "steinke2023_epsilon_delta",
    "mahloujifar2024_gdp",
)


@dataclass(frozen=True, slots=True)
class OneRunBounds(JsonRecord):
    """What one training run with m canaries says about the trainer's privacy.

    ``epsilon_lower`` refutes every claim (ε, δ)-DP with ε below it (Steinke et al. 2023);
    ``mu_lower`` refutes every claim μ-GDP with μ below it (Mahloujifar et al. 2024) and
    ``epsilon_lower_gdp`` is its (ε, δ) reading, the ε at ``delta`` of the strongest Gaussian
    curve refuted (``None`` when δ = 0, where any μ > 0 gives ε = ∞). Each holds with
    probability ≥ ``confidence``; ``k_plus``/``k_minus`` are 0 when only counts were given.
    """

    canaries: int
    k_plus: int
    k_minus: int
    guesses: int
    correct: int
    delta: float
    confidence: float
    epsilon_lower: float
    mu_lower: float
    epsilon_lower_gdp: float | None

    def refutes(self, claimed_epsilon: float) -> bool:
        """Whether the (ε, δ) bound refutes a claim (ε, ``delta``)-DP: ε < ``epsilon_lower``."""
        return check_claimed_epsilon(claimed_epsilon) < self.epsilon_lower

    @json_property(after="epsilon_lower")
    def epsilon_method(self) -> OneRunMethod:
        """The method of ``epsilon_lower``."""
        return ONE_RUN_METHODS[0]

    @json_property(after="epsilon_lower_gdp")
    def gdp_method(self) -> OneRunMethod:
        """The method of ``mu_lower`` and ``epsilon_lower_gdp``."""
        return ONE_RUN_METHODS[1]


def one_run_bounds(
    canaries: int,
    guesses: int,
    correct: int,
    *,
    delta: float,
    confidence: float = 0.95,
) -> OneRunBounds:
    """Both one-run lower bounds from the counts alone (k₊ and k₋ recorded as 0)."""
    m, r, v = check_guess_counts(canaries, guesses, correct)
    return _bounds(GuessCounts(m, 0, 0, r, v, 0), delta, confidence)


def audit_one_run(
    scores: ArrayLike,
    included: ArrayLike,
    *,
    k_plus: int,
    k_minus: int,
    direction: Direction,
    delta: float,
    confidence: float = 0.95,
) -> OneRunBounds:
    """Guess with the k₊/k₋ rule of :func:`~.guesses.count_correct_guesses` and bound ε.

    k₊ and k₋ must be fixed before the scores are seen (:func:`~.choose_k.choose_k` picks
    them from the number of canaries and the claim alone); choosing them by looking at
    which k gives the largest bound would void the confidence.
    """
    counts = count_correct_guesses(
        scores, included, k_plus=k_plus, k_minus=k_minus, direction=direction
    )
    return _bounds(counts, delta, confidence)


def _bounds(counts: GuessCounts, delta: float, confidence: float) -> OneRunBounds:
    d = check_delta(delta, allow_zero=True)
    level = check_confidence(confidence)
    m, r, v = counts.canaries, counts.guesses, counts.correct
    mu = one_run_mu_lower_bound(m, r, v, confidence=level)
    return OneRunBounds(
        canaries=m,
        k_plus=counts.k_plus,
        k_minus=counts.k_minus,
        guesses=r,
        correct=v,
        delta=d,
        confidence=level,
        epsilon_lower=one_run_epsilon_lower_bound(m, r, v, delta=d, confidence=level),
        mu_lower=mu,
        epsilon_lower_gdp=gdp_epsilon(d, mu) if d > 0.0 else None,
    )
