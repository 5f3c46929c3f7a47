"""epsstar.statistics.auditing.one_run.choose_k and .claims: k from the claim, the claim's μ."""

from __future__ import annotations

import inspect
import math

import dp_accounting
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.auditing.claims import claimed_mu
from epsstar.statistics.auditing.one_run.bounds import ONE_RUN_METHODS
from epsstar.statistics.auditing.one_run.choose_k import choose_k, expected_precision, given_k
from epsstar.statistics.readings.conversions import gdp_epsilon

# --- the claim's μ -----------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0, 8.0, 20.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-5, 1e-2])
def test_claimed_mu_is_one_over_the_analytic_gaussian_sigma(epsilon: float, delta: float) -> None:
    # dp_accounting calibrates the Gaussian mechanism exactly (to tol 1e-12 in σ); μ = 1/σ.
    sigma = dp_accounting.get_sigma_gaussian(epsilon, delta)
    assert claimed_mu(epsilon, delta) == pytest.approx(1.0 / sigma, rel=1e-9)


@settings(deadline=None, max_examples=100)
@given(st.floats(min_value=0.0, max_value=30.0), st.floats(min_value=1e-12, max_value=0.5))
def test_claimed_mu_inverts_gdp_epsilon(epsilon: float, delta: float) -> None:
    mu = claimed_mu(epsilon, delta)
    # gdp_epsilon returns 0 for every μ with δ_μ(0) ≤ δ; elsewhere it inverts exactly
    # (both roots are solved to ~1e-13 relative).
    assert gdp_epsilon(delta, mu) == pytest.approx(epsilon, rel=1e-8, abs=1e-8)


# --- expected precision ------------------------------------------------------------------------


def test_expected_precision_is_a_coin_without_leakage() -> None:
    assert expected_precision(1000, 10, 0.0) == pytest.approx(0.5, abs=1e-12)


def test_expected_precision_matches_simulated_canaries() -> None:
    # 400,000 canaries from the model; the top 5 % hold the simulated precision, whose
    # standard error is sqrt(p(1 − p)/20,000) ≤ 0.0036: 4 of them is the tolerance.
    rng = np.random.default_rng(7)
    m, k, mu = 400_000, 20_000, 1.5
    included = rng.random(m) < 0.5
    scores = rng.standard_normal(m) + mu * included
    top = np.argsort(-scores)[:k]
    assert expected_precision(m, k, mu) == pytest.approx(included[top].mean(), abs=4 * 0.0036)


@settings(deadline=None, max_examples=100)
@given(
    st.integers(min_value=2, max_value=10**7),
    st.floats(min_value=0.0, max_value=1.0),
    st.floats(min_value=0.0, max_value=10.0),
)
def test_expected_precision_falls_with_k_and_rises_with_mu(m: int, share: float, mu: float) -> None:
    k = max(1, int(share * (m // 2)))
    p = expected_precision(m, k, mu)
    assert 0.5 - 1e-12 <= p <= 1.0
    if k > 1:
        assert expected_precision(m, k - 1, mu) >= p - 1e-12
    assert expected_precision(m, k, mu + 0.5) >= p - 1e-12


# --- choosing k --------------------------------------------------------------------------------


def test_choice_reads_no_scores() -> None:
    # Nothing but m, the claim, the confidence and the method: no way to peek.
    assert list(inspect.signature(choose_k).parameters) == [
        "canaries",
        "claimed_epsilon",
        "delta",
        "confidence",
        "method",
        "sides",
    ]


@pytest.mark.parametrize("method", ONE_RUN_METHODS)
@pytest.mark.parametrize("canaries", [50, 1000, 20_000])
@pytest.mark.parametrize("epsilon", [1.0, 4.0, 8.0])
def test_expected_bound_stays_below_the_claim(method: str, canaries: int, epsilon: float) -> None:
    # The model is a trainer exactly at the claim: the bound its typical count gives must
    # not refute the claim (a bound above it would mean an invalid bound or model).
    chosen = choose_k(canaries, epsilon, 1e-5, method=method)
    assert 1 <= chosen.k <= canaries // 2
    at_claim = claimed_mu(epsilon, 1e-5)
    if chosen.mu == at_claim:
        assert 0.0 <= chosen.expected_epsilon_lower < epsilon
    else:  # no k had power at the claim: chosen against a trainer with μ doubled
        assert chosen.mu / at_claim in {2.0**j for j in range(1, 7)}
        assert chosen.expected_epsilon_lower > 0.0
    assert chosen.expected_correct <= 2 * chosen.k
    assert chosen.to_dict()["method"] == method


def test_choice_is_the_best_candidate() -> None:
    # With m ≤ 512 every k is a candidate: no k does better than the chosen one.
    from epsstar.statistics.auditing.one_run.approximate_dp import one_run_epsilon_lower_bound

    m, eps, delta = 300, 4.0, 1e-5
    chosen = choose_k(m, eps, delta)
    mu = claimed_mu(eps, delta)
    for k in range(1, m // 2 + 1):
        correct = min(2 * k, round(2 * k * expected_precision(m, k, mu)))
        assert one_run_epsilon_lower_bound(m, 2 * k, correct, delta=delta) <= (
            chosen.expected_epsilon_lower
        )


def test_bad_choice_input_is_refused() -> None:
    with pytest.raises(InvalidInputError, match=r"method must be one of .* Found 'best'."):
        choose_k(100, 1.0, 1e-5, method="best")
    with pytest.raises(InvalidInputError, match=r"delta must be in \(0, 0.5\). Found 0.0."):
        choose_k(100, 1.0, 0.0)
    with pytest.raises(InvalidInputError, match=r"k must be at most half the canaries \(5\)."):
        expected_precision(10, 6, 1.0)
    with pytest.raises(InvalidInputError, match=r"claimed_epsilon must be in \[0, inf\)"):
        claimed_mu(math.inf, 1e-5)


def test_with_no_power_at_the_claim_k_is_chosen_for_a_leakier_trainer() -> None:
    # 200 canaries at confidence 0.99 cannot expect a bound above 0 from a trainer at ε = 1:
    # every k ties at 0 and k = 1 (two guesses) could never refute anything. μ is doubled
    # until some k expects a bound above 0; that k has power against the leakier trainer.
    chosen = choose_k(200, 1.0, 3.4e-4, confidence=0.99)
    assert chosen.mu == 2.0 * claimed_mu(1.0, 3.4e-4)
    assert chosen.k > 10
    assert chosen.expected_epsilon_lower > 0.0


def test_the_choice_is_remembered_per_argument() -> None:
    # The threat models of one audit ask for the same k: the search runs once. Every argument
    # is part of the key (a cache that ignored the confidence would return the other record).
    first = choose_k(300, 2.0, 1e-5, confidence=0.9)
    assert choose_k(300, 2.0, 1e-5, confidence=0.9) is first
    other = choose_k(300, 2.0, 1e-5, confidence=0.99)
    assert other.confidence == 0.99
    assert other is not first
    assert choose_k(300, 2.0, 1e-5, confidence=0.9, method="mahloujifar2024_gdp").method == (
        "mahloujifar2024_gdp"
    )


def test_a_given_k_is_recorded_with_what_it_expects_at_the_claim() -> None:
    # The chosen k's record and a given k's record agree when the k is the same: the same
    # expected right guesses and bound at the claim's μ.
    chosen = choose_k(300, 4.0, 1e-5)
    given = given_k(300, chosen.k, 4.0, 1e-5)
    assert given == chosen
    wide = given_k(300, 150, 4.0, 1e-5)
    assert wide.k == 150
    assert wide.mu == claimed_mu(4.0, 1e-5)
    assert wide.expected_correct == round(300 * expected_precision(300, 150, wide.mu))
    with pytest.raises(InvalidInputError, match=r"k must be at most half the canaries \(150\)."):
        given_k(300, 151, 4.0, 1e-5)


def test_a_one_sided_rule_gets_its_own_k_over_k_guesses() -> None:
    # One side: k guesses at the same precision (the Gaussian model is symmetric), so the
    # expected right guesses are half the two-sided rule's at the same k, and the k that
    # maximises the expected bound is searched again for them.
    one = choose_k(1000, 1.0, 1e-5, sides=1)
    assert one.sides == 1
    again = given_k(1000, one.k, 1.0, 1e-5, sides=1)
    assert again == one
    assert one.expected_correct == round(one.k * expected_precision(1000, one.k, one.mu))
    two = given_k(1000, one.k, 1.0, 1e-5)
    assert two.sides == 2
    assert two.expected_correct == round(2 * one.k * expected_precision(1000, one.k, two.mu))
    with pytest.raises(InvalidInputError, match=r"sides must be 1 or 2\. Found 3\.$"):
        choose_k(1000, 1.0, 1e-5, sides=3)
