"""epsstar.statistics.auditing.one_run: the guessing rule (.guesses), one-run record (.bounds)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.auditing.one_run.approximate_dp import one_run_epsilon_lower_bound
from epsstar.statistics.auditing.one_run.bounds import (
    ONE_RUN_METHODS,
    OneRunBounds,
    audit_one_run,
    one_run_bounds,
)
from epsstar.statistics.auditing.one_run.gaussian_dp import one_run_mu_lower_bound
from epsstar.statistics.auditing.one_run.guesses import count_correct_guesses
from epsstar.statistics.readings.conversions import gdp_epsilon
from tests.statistics.auditing.peer_values import SCORE_CASES, canary_scores

# --- the guessing rule -------------------------------------------------------------------------


def test_guesses_by_hand() -> None:
    scores = [5.0, 1.0, 4.0, 2.0, 3.0, 0.0]
    included = [1, 0, 0, 1, 1, 0]
    # Highest two (5, 4) guessed "in": one right; lowest two (0, 1) guessed "out": both right.
    got = count_correct_guesses(scores, included, k_plus=2, k_minus=2, direction="members_higher")
    assert (got.canaries, got.guesses, got.correct, got.included) == (6, 4, 3, 3)
    # As losses the roles swap: lowest two (0, 1) "in": none right; highest (5, 4) "out": one.
    as_losses = count_correct_guesses(
        scores, included, k_plus=2, k_minus=2, direction="members_lower"
    )
    assert as_losses.correct == 1


def test_ties_are_broken_by_position() -> None:
    got = count_correct_guesses(
        [1.0, 1.0, 1.0], [0, 1, 1], k_plus=1, k_minus=1, direction="members_higher"
    )
    # First canary guessed "in" (wrong), last guessed "out" (wrong).
    assert got.correct == 0


@settings(deadline=None, max_examples=100)
@given(st.integers(min_value=1, max_value=200), st.integers(min_value=0, max_value=2**32 - 1))
def test_rule_matches_a_sort_by_hand(m: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal(m)
    included = rng.random(m) < 0.5
    k_plus = int(rng.integers(0, m + 1))
    k_minus = int(rng.integers(0, m - k_plus + 1))
    ranked = sorted(range(m), key=lambda i: -scores[i])
    right = sum(included[i] for i in ranked[:k_plus])
    right += sum(not included[i] for i in ranked[m - k_minus :])
    got = count_correct_guesses(
        scores, included, k_plus=k_plus, k_minus=k_minus, direction="members_higher"
    )
    assert got.correct == right
    assert got.guesses == k_plus + k_minus


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"scores": [1.0, 2.0], "included": [1], "k_plus": 1, "k_minus": 0},
            "included must hold one 0/1 value per canary (2). Found shape (1,).",
        ),
        (
            {"scores": [1.0, 2.0], "included": [1, 2], "k_plus": 1, "k_minus": 0},
            "included must be 0/1 or booleans; the first other value is at index 1. Found 2.",
        ),
        (
            {"scores": [1.0, 2.0], "included": [1, 0], "k_plus": 2, "k_minus": 1},
            "k_plus + k_minus must be at most the number of canaries (2). Found 3.",
        ),
        (
            {"scores": [1.0, math.nan], "included": [1, 0], "k_plus": 1, "k_minus": 0},
            "scores must be finite; 1 value(s) are not, the first at index 1. Found nan.",
        ),
    ],
)
def test_bad_guessing_input_is_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidInputError) as error:
        count_correct_guesses(**kwargs, direction="members_higher")
    assert str(error.value) == message


def test_unknown_direction_is_refused() -> None:
    with pytest.raises(InvalidInputError, match=r"direction must be one of .* Found 'up'."):
        count_correct_guesses([1.0], [1], k_plus=1, k_minus=0, direction="up")


# --- the record --------------------------------------------------------------------------------


def test_record_holds_both_bounds() -> None:
    bounds = one_run_bounds(1000, 100, 80, delta=1e-5, confidence=0.95)
    assert bounds.epsilon_lower == one_run_epsilon_lower_bound(1000, 100, 80, delta=1e-5)
    assert bounds.mu_lower == one_run_mu_lower_bound(1000, 100, 80)
    assert bounds.epsilon_lower_gdp == gdp_epsilon(1e-5, bounds.mu_lower)
    assert bounds.refutes(bounds.epsilon_lower - 1e-6)
    assert not bounds.refutes(bounds.epsilon_lower)
    record = json.loads(json.dumps(bounds.to_dict()))
    assert record["epsilon_method"] == ONE_RUN_METHODS[0]
    assert record["gdp_method"] == ONE_RUN_METHODS[1]
    assert record["correct"] == 80
    assert set(record) >= {f.name for f in OneRunBounds.__dataclass_fields__.values()}


def test_pure_epsilon_record_has_no_gdp_epsilon() -> None:
    bounds = one_run_bounds(100, 20, 20, delta=0.0)
    assert bounds.epsilon_lower_gdp is None
    assert bounds.mu_lower > 0.0


def test_the_record_keeps_the_counts_and_settings() -> None:
    bounds = one_run_bounds(1000, 100, 80, delta=1e-5, confidence=0.8)
    assert (bounds.canaries, bounds.guesses, bounds.correct) == (1000, 100, 80)
    assert (bounds.k_plus, bounds.k_minus) == (0, 0)  # only counts were given
    assert (bounds.delta, bounds.confidence) == (1e-5, 0.8)
    scores = np.arange(10.0)
    included = np.array([1, 1, 1, 0, 1, 0, 0, 1, 0, 0])
    ran = audit_one_run(
        scores, included, k_plus=3, k_minus=2, direction="members_higher", delta=1e-5
    )
    assert (ran.canaries, ran.k_plus, ran.k_minus, ran.guesses) == (10, 3, 2, 5)


def _pure_epsilon_bound_by_hand(guesses: int, correct: int, confidence: float) -> float:
    """At δ = 0 the one-run bound is the binomial test of randomized response (Steinke et al.
    2023, Theorem 3.1 with δ = 0): the ε at which P[Binomial(r, e^ε/(1 + e^ε)) ≥ v] = 1 − c."""

    def excess(eps: float) -> float:
        q = 1.0 / (1.0 + math.exp(-eps))
        return float(stats.binom.sf(correct - 1, guesses, q)) - (1.0 - confidence)

    return float(optimize.brentq(excess, 0.0, 20.0, xtol=1e-13))


def test_a_non_default_confidence_reaches_both_bounds() -> None:
    bounds = one_run_bounds(1000, 100, 80, delta=0.0, confidence=0.8)
    # rel=1e-6 covers the two root finders' tolerances; at 95 % the bound is 16 % lower.
    by_hand = _pure_epsilon_bound_by_hand(100, 80, 0.8)
    assert bounds.epsilon_lower == pytest.approx(by_hand, rel=1e-6)
    assert bounds.mu_lower == one_run_mu_lower_bound(1000, 100, 80, confidence=0.8)
    assert bounds.mu_lower > one_run_mu_lower_bound(1000, 100, 80)


@pytest.mark.parametrize("case", SCORE_CASES, ids=lambda c: f"m{c[0]}-mu{c[1]}-k{c[2]}-{c[3]}")
def test_scores_agree_with_the_peers(case: tuple[float, ...]) -> None:
    m, mu, k_plus, k_minus, delta, jax_eps, jax_fdp, meter_eps, meter_correct = case
    scores, included = canary_scores(int(m), mu)
    bounds = audit_one_run(
        scores,
        included,
        k_plus=int(k_plus),
        k_minus=int(k_minus),
        direction="members_higher",
        delta=delta,
    )
    # ML Privacy Meter's rule on the same scores counts the same right guesses ...
    assert bounds.correct == meter_correct
    # ... and its bisection returns the lower end of a 1e-5 bracket.
    assert 0.0 <= bounds.epsilon_lower - meter_eps <= 1e-5 + 1e-9
    if not math.isnan(jax_eps):
        # jax_privacy's Brent's method stops at xtol = 1e-6 (in ε, for both bounds).
        assert bounds.epsilon_lower == pytest.approx(jax_eps, abs=2e-6)
        assert bounds.epsilon_lower_gdp == pytest.approx(jax_fdp, abs=2e-6)
