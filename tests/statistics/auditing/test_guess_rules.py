"""The one-run guessing rules: valid on exactly ε-DP canaries, and abstaining where it pays."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.auditing.one_run.bounds import audit_one_run
from epsstar.statistics.auditing.one_run.guess_rules import (
    audit_guess_rule,
    rule_candidates,
    rule_sides,
)
from epsstar.statistics.names import GUESS_RULES, GuessRule

TRIALS = 200
CONFIDENCE = 0.8
# The count of bounds above the true ε that a failure rate of 1 − CONFIDENCE exceeds with
# probability 1e-6: a valid rule stays under it (protects against flaky failures), an invalid
# one (failing at a higher rate) does not.
LIMIT = int(binom.isf(1e-6, TRIALS, 1 - CONFIDENCE))


def _failures(rule: GuessRule, eps: float, m: int, k: int, delta: float, seed: int) -> int:
    """How often ``rule``'s bound exceeds ε on canaries of exactly ε-DP randomized response."""
    q = math.exp(eps) / (1 + math.exp(eps))
    rng = np.random.default_rng(seed)
    failures = 0
    for _ in range(TRIALS):
        included = rng.random(m) < 0.5
        # Each canary's output bit is its inclusion bit w.p. q, flipped otherwise: exactly
        # ε-DP per canary; the jitter breaks ties independently of the bits.
        output = np.where(rng.random(m) < q, included, ~included)
        scores = output + 0.5 * rng.random(m)
        bounds = audit_guess_rule(
            scores,
            included,
            rule=rule,
            k=k,
            direction="members_higher",
            delta=delta,
            confidence=CONFIDENCE,
        )
        failures += bounds.chosen.epsilon_lower > eps
    return failures


@settings(max_examples=8, deadline=None)
@given(
    rule=st.sampled_from(GUESS_RULES.names),
    eps=st.floats(0.25, 3.0),
    m=st.integers(40, 300),
    share=st.floats(0.05, 0.5),
    delta=st.sampled_from([0.0, 1e-5]),
    seed=st.integers(0, 2**31),
)
def test_every_rule_exceeds_the_true_epsilon_at_most_at_its_error_rate(
    rule: GuessRule, eps: float, m: int, share: float, delta: float, seed: int
) -> None:
    k = max(1, int(share * m))
    assert _failures(rule, eps, m, k, delta, seed) <= LIMIT


def test_the_validity_check_can_fail() -> None:
    # The same simulation trips the limit when the bound is taken at 20 % confidence (an
    # invalid bound for a claim of 80 %): the check tells a valid rule from an invalid one.
    rng = np.random.default_rng(7)
    eps, m, k = 1.0, 200, 50
    q = math.exp(eps) / (1 + math.exp(eps))
    failures = 0
    for _ in range(TRIALS):
        included = rng.random(m) < 0.5
        scores = np.where(rng.random(m) < q, included, ~included) + 0.5 * rng.random(m)
        bounds = audit_guess_rule(
            scores,
            included,
            rule="symmetric",
            k=k,
            direction="members_higher",
            delta=0.0,
            confidence=0.2,
        )
        failures += bounds.chosen.epsilon_lower > eps
    assert failures > LIMIT


def test_both_splits_the_confidence_three_ways_and_keeps_the_largest_bound() -> None:
    rng = np.random.default_rng(3)
    included = rng.random(400) < 0.5
    scores = rng.normal(size=400) + included
    both = audit_guess_rule(
        scores,
        included,
        rule="both",
        k=60,
        k_one_sided=45,
        direction="members_higher",
        delta=1e-5,
    )
    assert both.confidence_each == pytest.approx(1 - 0.05 / 3)
    assert [(b.k_plus, b.k_minus) for b in both.candidates] == [(60, 60), (45, 0), (0, 45)]
    assert both.chosen.epsilon_lower == max(b.epsilon_lower for b in both.candidates)
    for b in both.candidates:
        alone = audit_one_run(
            scores,
            included,
            k_plus=b.k_plus,
            k_minus=b.k_minus,
            direction="members_higher",
            delta=1e-5,
            confidence=1 - 0.05 / 3,
        )
        assert alone == b


def test_members_only_lifts_the_cap_of_a_partial_leak() -> None:
    # 90 % of the included canaries exposed (score 0, a loss), the rest look like excluded
    # ones (score 1 + jitter): the symmetric rule's "out" guesses are about 1 in 11 wrong,
    # which keeps its bound under 3; "in" guesses only are all right and refute ε = 3.
    rng = np.random.default_rng(11)
    included = rng.random(400) < 0.5
    exposed = included & (rng.random(400) < 0.9)
    losses = np.where(exposed, 0.0, 1.0) + 0.01 * rng.random(400)
    found = {
        rule: audit_guess_rule(
            losses, included, rule=rule, k=150, direction="members_lower", delta=1e-5
        ).chosen.epsilon_lower
        for rule in GUESS_RULES
    }
    assert found["symmetric"] < 3.0 < found["both"] < found["members-only"]
    assert found["nonmembers-only"] < 3.0  # the exposed members sit at the other end


def test_nonmembers_only_reads_a_model_that_memorises_its_training_records() -> None:
    # What a memorising model does to canaries: every member at a low loss, but so are many
    # excluded canaries that resemble training records; only the highest losses are all
    # excluded. The "out" guesses there are all right, the "in" guesses a mix.
    rng = np.random.default_rng(5)
    included = rng.random(1000) < 0.5
    alike = ~included & (rng.random(1000) < 0.6)
    losses = np.where(included | alike, 0.0, 5.0) + 0.01 * rng.random(1000)
    found = {
        rule: audit_guess_rule(
            losses, included, rule=rule, k=133, direction="members_lower", delta=1e-5
        ).chosen.epsilon_lower
        for rule in GUESS_RULES
    }
    assert found["members-only"] < found["symmetric"] < 3.0 < found["both"]
    assert found["both"] < found["nonmembers-only"]  # the price of a third of the error rate


def test_rules_give_each_single_rule_its_sides_and_k() -> None:
    assert [rule_sides(rule) for rule in GUESS_RULES] == [(2, 1, 1), (2,), (1,), (1,)]
    assert rule_candidates("nonmembers-only", 10, 7) == ((0, 7),)
    assert rule_candidates("members-only", 10) == ((10, 0),)


def test_bad_rule_and_k_are_refused() -> None:
    bad: Any = "top"
    with pytest.raises(InvalidInputError, match=r"must be one of .* Found 'top'\.$"):
        rule_candidates(bad, 3)
    with pytest.raises(InvalidInputError, match=r"k must be an integer ≥ 1\. Found 0\.$"):
        rule_candidates("symmetric", 0)
