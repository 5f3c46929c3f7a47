"""epsstar.statistics.auditing.feasibility: the smallest audit that could refute a claim."""

from __future__ import annotations

import math
from typing import Any

import pytest
from scipy.special import expit, ndtri

from epsstar.exceptions import InsufficientDataError, InvalidInputError
from epsstar.statistics.auditing.claims import claimed_mu
from epsstar.statistics.auditing.feasibility import (
    canaries_at_precision,
    check_canaries_can_refute,
    check_runs_can_refute,
    smallest_canary_count,
    smallest_run_count,
)
from epsstar.statistics.auditing.one_run.approximate_dp import (
    one_run_epsilon_lower_bound,
    one_run_p_value,
)
from epsstar.statistics.auditing.one_run.gaussian_dp import one_run_mu_lower_bound
from epsstar.statistics.bounds.from_counts import epsilon_lower_bound
from epsstar.statistics.readings.conversions import gdp_mu_lower_bound

CLAIMS = [0.0, 0.5, 1.0, 4.0, 8.0, 12.0]


@pytest.mark.parametrize("epsilon", CLAIMS)
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_pure_one_run_closed_form(epsilon: float, confidence: float) -> None:
    # δ = 0 and every guess right: q^m < 1 − c ⇔ m > log(1 − c)/log q.
    expected = math.floor(math.log(1 - confidence) / math.log(expit(epsilon))) + 1
    assert smallest_canary_count(epsilon, 0.0, confidence=confidence) == expected


@pytest.mark.parametrize("epsilon", CLAIMS)
@pytest.mark.parametrize("delta", [1e-10, 1e-8])  # 2δ(1 + e^12) < 0.05: every claim refutable
def test_one_run_answer_is_the_first_that_refutes(epsilon: float, delta: float) -> None:
    m = smallest_canary_count(epsilon, delta)
    assert one_run_p_value(m, m, m, epsilon, delta) < 0.05
    assert one_run_p_value(m - 1, m - 1, m - 1, epsilon, delta) >= 0.05 if m > 1 else True
    # The bound function agrees: m perfect guesses refute the claim.
    assert one_run_epsilon_lower_bound(m, m, m, delta=delta) > epsilon


@pytest.mark.parametrize("epsilon", CLAIMS)
@pytest.mark.parametrize("delta", [1e-8, 1e-5])
def test_gdp_one_run_answer_is_the_first_that_refutes(epsilon: float, delta: float) -> None:
    m = smallest_canary_count(epsilon, delta, method="mahloujifar2024_gdp")
    mu = claimed_mu(epsilon, delta)
    assert one_run_mu_lower_bound(m, m, m) > mu
    if m > 1:
        assert one_run_mu_lower_bound(m - 1, m - 1, m - 1) <= mu


def test_gdp_needs_fewer_canaries() -> None:
    for epsilon in (1.0, 4.0, 8.0):
        assert smallest_canary_count(
            epsilon, 1e-5, method="mahloujifar2024_gdp"
        ) < smallest_canary_count(epsilon, 1e-5)


@pytest.mark.parametrize("epsilon", CLAIMS)
@pytest.mark.parametrize("delta", [0.0, 1e-5])
def test_many_run_closed_form(epsilon: float, delta: float) -> None:
    # No error in R runs each way: both upper bounds are u = 1 − ((1 − c)/2)^(1/R), and
    # log((1 − δ − u)/u) > ε ⇔ u < (1 − δ)/(1 + e^ε).
    limit = (1 - delta) / (1 + math.exp(epsilon))
    expected = math.floor(math.log(0.025) / math.log1p(-limit)) + 1
    got = smallest_run_count(epsilon, delta)
    assert got == expected
    assert epsilon_lower_bound(0, got, 0, got, delta=delta).epsilon > epsilon
    assert epsilon_lower_bound(0, got - 1, 0, got - 1, delta=delta).epsilon <= epsilon


@pytest.mark.parametrize("epsilon", CLAIMS)
def test_gdp_many_run_closed_form(epsilon: float) -> None:
    # μ⁻ = −2Φ^{-1}(u) with u as above: μ⁻ > μ ⇔ u < Φ(−μ/2).
    mu = claimed_mu(epsilon, 1e-5)
    got = smallest_run_count(epsilon, 1e-5, method="gdp_clopper_pearson")
    assert gdp_mu_lower_bound(0, got, 0, got) > mu
    assert gdp_mu_lower_bound(0, got - 1, 0, got - 1) <= mu if got > 1 else True
    u = 1 - 0.025 ** (1 / got)
    assert -2 * float(ndtri(u)) > mu


def test_hopeless_one_run_is_refused_in_one_line() -> None:
    with pytest.raises(InsufficientDataError) as error:
        check_canaries_can_refute(1000, 8.0, 1e-5)
    assert str(error.value) == (
        "canaries are too few to refute ε = 8 (δ = 1e-05) at 0.95 confidence with "
        "steinke2023_epsilon_delta even if every guess is right: at least 12977 are needed. "
        "Found 1000."
    )
    check_canaries_can_refute(12977, 8.0, 1e-5)  # enough: no error
    check_canaries_can_refute(1000, 8.0, 1e-5, method="mahloujifar2024_gdp")


def test_hopeless_many_runs_are_refused_in_one_line() -> None:
    with pytest.raises(InsufficientDataError, match=r"at least 204 evaluation runs per arm"):
        check_runs_can_refute(100, 4.0, 0.0)
    check_runs_can_refute(204, 4.0, 0.0)


def test_claims_no_audit_can_refute() -> None:
    # With δ(1 + e^ε) large the δ term of Steinke et al. keeps every p-value above 5 %.
    with pytest.raises(InvalidInputError) as error:
        smallest_canary_count(10.0, 1e-5)
    assert str(error.value).endswith("Found ε = 10, δ = 1e-05.")
    assert "\n" not in str(error.value)


def test_bad_method_is_refused() -> None:
    with pytest.raises(InvalidInputError, match=r"method must be one of .* Found 'magic'."):
        smallest_run_count(1.0, 1e-5, method="magic")
    with pytest.raises(InvalidInputError, match=r"delta must be in \(0, 0.5\). Found 0.0."):
        smallest_canary_count(1.0, 0.0, method="mahloujifar2024_gdp")


@pytest.mark.parametrize("method", ["steinke2023_epsilon_delta", "mahloujifar2024_gdp"])
def test_a_projection_at_perfect_precision_is_the_smallest_audit(method: Any) -> None:
    # Every canary guessed, every guess right: the projection asks what smallest_canary_count
    # asks, so the two searches must agree.
    projected = canaries_at_precision(1.0, 1.0, 2.0, 1e-5, confidence=0.95, method=method)
    assert projected.canaries == smallest_canary_count(2.0, 1e-5, confidence=0.95, method=method)


def test_a_projection_needs_a_precision_the_claim_does_not_allow() -> None:
    # (ε, δ)-DP lets guesses be right at a rate of at most about e^ε/(1 + e^ε) (0.731 at
    # ε = 1): below it no audit refutes, above it more canaries do, and fewer as it grows.
    below = canaries_at_precision(0.72, 0.3, 1.0, 1e-5)
    assert below.canaries is None
    near = canaries_at_precision(0.78, 0.3, 1.0, 1e-5)
    far = canaries_at_precision(0.9, 0.3, 1.0, 1e-5)
    assert near.canaries is not None
    assert far.canaries is not None
    assert far.canaries < near.canaries
    guesses = round(0.3 * far.canaries)
    right = math.floor(0.9 * guesses)
    assert one_run_epsilon_lower_bound(far.canaries, guesses, right, delta=1e-5) > 1.0
    assert far.to_dict() == {
        "precision": 0.9,
        "share_guessed": 0.3,
        "canaries": far.canaries,
        "canaries_at_zero_delta": far.canaries_at_zero_delta,
    }
    # Below the precision the claim allows, δ = 0 does not help either.
    assert below.canaries_at_zero_delta is None


def test_a_projection_tells_a_delta_too_large_from_guesses_too_imprecise() -> None:
    # Perfect guesses on a fifth of the canaries refute ε = 1 at δ = 0 with 48 canaries, as
    # smallest_canary_count's closed form for δ = 0 gives for the 10 guesses that are: the
    # fewest m with (e/(1 + e))^(m/5) < 0.05. At δ = 0.0036 (1/(n ln n) of 50 records) the δ
    # term, which grows with the canaries, keeps every audit's p-value above 0.05.
    large = canaries_at_precision(1.0, 0.2, 1.0, 0.0036)
    assert large.canaries is None
    assert large.canaries_at_zero_delta == 48
    guesses = math.ceil(math.log(0.05) / math.log(math.e / (1 + math.e)))
    assert round(0.2 * 48) == guesses
    assert round(0.2 * 47) < guesses
    small = canaries_at_precision(1.0, 0.2, 1.0, 1e-5)
    assert small.canaries == small.canaries_at_zero_delta == 48
    # The μ-GDP bound reads δ into μ: no projection at δ = 0.
    gdp = canaries_at_precision(1.0, 0.2, 1.0, 1e-5, method="mahloujifar2024_gdp")
    assert gdp.canaries_at_zero_delta is None
