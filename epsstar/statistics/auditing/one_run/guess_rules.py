"""Guessing rules for a one-run audit, fixed before the scores are seen, and their bounds.

Steinke, Nasr & Jagielski 2023 ("Privacy Auditing with One (1) Training Run") bound the right
guesses W of any guess vector T ∈ {−1, 0, +1}^m with at most r non-zero entries that is a function
of the training run's output alone: the auditor may abstain on any canary, and may guess "in" only.
So every rule below is a special case of their theorem:

* ``"symmetric"`` — "in" for the k most member-like canaries, "out" for the k least
  (k₊ = k₋ = k, r = 2k): the rule of :func:`~.guesses.count_correct_guesses` used so far.
* ``"members-only"`` — "in" for the k most member-like, abstain on the rest (k₊ = k, k₋ = 0,
  r = k). A trainer that leaks on part of its canaries only (a model memorising some of its
  records, say) makes the exposed members the most member-like, but leaves the least
  member-like as a mix of excluded canaries and members it did not expose: the "out"
  guesses of the symmetric rule are then wrong at the rate of that mix, which caps the bound
  (the arithmetic is in ``docs/training-audit.md``). Abstaining there removes the cap.
* ``"nonmembers-only"`` — "out" for the k least member-like, abstain on the rest (k₊ = 0,
  k₋ = k, r = k): the mirror image, for a trainer whose members hide among the canaries it
  scores high while the canaries it scores lowest are all left out (a model that memorises
  its training records puts the excluded canaries alone at the high-loss end).
* ``"both"`` — the three rules above, each bounded at confidence 1 − (1 − c)/3, and the
  largest bound kept. Validity by the union bound (Bonferroni): if the trainer is (ε, δ)-DP,
  each rule's bound exceeds ε with probability ≤ (1 − c)/3, so the largest exceeds it with
  probability ≤ 1 − c. Keeping the largest is no peeking: the three rules and their
  confidence were fixed before any score was seen, and the split pays for the choice.

The same holds for the μ-GDP bound of Mahloujifar, Melis & Chaudhuri 2024, which reads the
same counts. k itself must come from the design (the number of canaries and the claim:
:func:`~.choose_k.choose_k`, which gives a two-sided and a one-sided rule each its own k, or a
fixed k), never from the scores.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

from numpy.typing import ArrayLike

from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.plumbing.records.json_types import JsonObject
from epsstar.statistics._validation import check_confidence, check_positive_int
from epsstar.statistics.auditing.one_run.bounds import OneRunBounds, audit_one_run
from epsstar.statistics.bounds.from_counts import bonferroni_confidence
from epsstar.statistics.bounds.held_out_bound import Direction
from epsstar.statistics.names import GUESS_RULES, GuessRule

__all__ = [
    "RuleBounds",
    "audit_guess_rule",
    "rule_candidates",
    "rule_confidence",
    "rule_sides",
]

#: The keys of each candidate in a rule's JSON: its (k₊, k₋), right guesses and bounds.
_CANDIDATE_KEYS: Final = ("k_plus", "k_minus", "correct", "epsilon_lower", "epsilon_lower_gdp")
#: The single rules each rule bounds, in order: ("in" guesses?, "out" guesses?).
_PARTS: Final[dict[GuessRule, tuple[tuple[bool, bool], ...]]] = {
    "symmetric": ((True, True),),
    "members-only": ((True, False),),
    "nonmembers-only": ((False, True),),
    "both": ((True, True), (True, False), (False, True)),
}
Decide = Literal["epsilon", "gdp"]


def rule_sides(rule: GuessRule) -> tuple[int, ...]:
    """The number of sides (2: "in" and "out"; 1: one of them) of each single rule that
    ``rule`` bounds, in order: what :func:`~.choose_k.choose_k` needs to give each its k."""
    return tuple(int(plus) + int(minus) for plus, minus in _PARTS[GUESS_RULES.check(rule)])


def rule_confidence(rule: GuessRule, confidence: float) -> float:
    """The confidence each single rule of ``rule`` is bounded at: ``confidence`` for one rule,
    the Bonferroni share of it for the three of ``"both"`` (so that the one kept holds at
    ``confidence``); each rule's k is chosen for the confidence it is bounded at."""
    level = check_confidence(confidence)
    count = len(_PARTS[GUESS_RULES.check(rule)])
    return bonferroni_confidence(level, count) if count > 1 else level


def rule_candidates(
    rule: GuessRule, k: int, k_one_sided: int | None = None
) -> tuple[tuple[int, int], ...]:
    """The (k₊, k₋) pairs a rule bounds: one, or three for ``"both"`` (symmetric, then
    members only, then non-members only). ``k`` is the two-sided rule's k, ``k_one_sided``
    the one-sided rules' (``k`` when not given)."""
    parts = _PARTS[GUESS_RULES.check(rule)]
    two = check_positive_int("k", k, minimum=1)
    one = two if k_one_sided is None else check_positive_int("k", k_one_sided, minimum=1)
    return tuple(
        (two, two) if plus and minus else (one if plus else 0, one if minus else 0)
        for plus, minus in parts
    )


@dataclass(frozen=True, slots=True)
class RuleBounds(JsonRecord):
    """The bounds of a rule: ``chosen`` is the candidate whose deciding bound is largest (the
    only one for a single rule), each candidate bounded at ``confidence_each``."""

    rule: GuessRule
    confidence: float
    confidence_each: float
    candidates: tuple[OneRunBounds, ...] = field(metadata=json_rule(skip=True))
    chosen: OneRunBounds = field(metadata=json_rule(skip=True))

    @json_property(name="candidates", after="candidates")
    def _candidate_rows(self) -> tuple[JsonObject, ...]:
        """Each candidate's :data:`_CANDIDATE_KEYS`, read from its own JSON."""
        return tuple(
            {key: row[key] for key in _CANDIDATE_KEYS}
            for row in (bounds.to_dict() for bounds in self.candidates)
        )

    @json_property(after="chosen")
    def chosen_k_plus(self) -> int:
        return self.chosen.k_plus

    @json_property(after="chosen")
    def chosen_k_minus(self) -> int:
        return self.chosen.k_minus


def _deciding(bounds: OneRunBounds, decide: Decide) -> float:
    if decide == "epsilon":
        return bounds.epsilon_lower
    return bounds.mu_lower


def audit_guess_rule(
    scores: ArrayLike,
    included: ArrayLike,
    *,
    rule: GuessRule,
    k: int,
    direction: Direction,
    delta: float,
    confidence: float = 0.95,
    decide: Decide = "epsilon",
    k_one_sided: int | None = None,
) -> RuleBounds:
    """Bound ε with ``rule`` and k fixed in advance (see the module for why it is valid):
    ``k`` for the two-sided rule, ``k_one_sided`` (default ``k``) for the one-sided ones.

    ``decide`` says which bound picks the candidate of ``"both"``: the (ε, δ) bound of
    Steinke et al. (``"epsilon"``) or the μ-GDP bound (``"gdp"``, by μ).
    """
    level = check_confidence(confidence)
    pairs = rule_candidates(rule, k, k_one_sided)
    each = rule_confidence(rule, level)
    candidates = tuple(
        audit_one_run(
            scores,
            included,
            k_plus=plus,
            k_minus=minus,
            direction=direction,
            delta=delta,
            confidence=each,
        )
        for plus, minus in pairs
    )
    chosen = max(candidates, key=lambda b: _deciding(b, decide))  # first on ties
    return RuleBounds(rule, level, each, candidates, chosen)
