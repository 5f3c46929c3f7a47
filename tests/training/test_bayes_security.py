"""The largest membership advantage of DP-SGD from its PLD, checked without dp_accounting."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.readings.conversions import (
    bayes_security_dpsgd,
    bayes_security_from_delta_at_zero,
)
from epsstar.statistics.readings.subsampled_gaussian import advantage_monte_carlo
from epsstar.training.accounting import (
    MembershipAdvantage,
    advantage_interval,
    membership_advantage,
)


@pytest.mark.slow
@pytest.mark.parametrize("neighbouring", ["add_remove", "substitution"])
@pytest.mark.parametrize(
    ("q", "sigma", "steps", "samples"),
    [(0.3, 2.0, 20, 100_000), (0.1, 1.0, 100, 100_000), (0.02, 0.5, 300, 50_000)],
)
def test_advantage_matches_monte_carlo(
    q: float, sigma: float, steps: int, samples: int, neighbouring: str
) -> None:
    estimate, error = advantage_monte_carlo(q, sigma, steps, neighbouring, samples)
    exact = membership_advantage(sigma, q, steps, neighbouring).advantage
    assert exact == pytest.approx(estimate, abs=5 * error)


@pytest.mark.parametrize(("q", "sigma"), [(0.01, 0.5), (0.3, 2.0), (0.001, 10.0), (0.5, 0.8)])
def test_one_step_is_q_times_the_gaussian_distance(q: float, sigma: float) -> None:
    # The shared (1−q)·N(0, σ²) cancels: TV = q·TV(N(a), N(b)) = q·(2Φ(|a−b|/(2σ)) − 1).
    add = membership_advantage(sigma, q, 1, "add_remove").advantage
    sub = membership_advantage(sigma, q, 1, "substitution").advantage
    assert add == pytest.approx(q * (2 * norm.cdf(1 / (2 * sigma)) - 1), abs=1e-12)
    assert sub == pytest.approx(q * (2 * norm.cdf(1 / sigma) - 1), abs=1e-12)


@pytest.mark.parametrize(("sigma", "steps"), [(0.7, 3), (2.0, 10), (5.0, 100), (10.0, 1000)])
def test_full_batch_is_gaussian_dp(sigma: float, steps: int) -> None:
    # q = 1: T Gaussian steps are μ-GDP with μ = √T/σ, and Adv = 2Φ(μ/2) − 1 (μ for add/remove,
    # 2μ for substitution). The pessimistic grid may only overstate the advantage, and slightly.
    mu = math.sqrt(steps) / sigma
    for neighbouring, distance in (("add_remove", mu), ("substitution", 2 * mu)):
        advantage = membership_advantage(sigma, 1.0, steps, neighbouring).advantage
        closed_form = 2 * norm.cdf(distance / 2) - 1
        assert 0.0 <= advantage - closed_form < 2e-5


def test_demo_setting_exact_is_below_the_closed_form() -> None:
    # The demo's ε = 10 strategy: UCI Adult (n = 32,561), batch 64, 5 epochs, σ = 0.4392.
    q, steps, sigma = 64 / 32_561, 509 * 5, 0.4392
    result = membership_advantage(sigma, q, steps)
    beta = bayes_security_from_delta_at_zero(result.advantage)
    closed = bayes_security_dpsgd(q, steps, sigma, "add_remove").beta_closed_form
    assert beta == pytest.approx(0.685, abs=0.002)  # Monte Carlo: benchmarks/bayes_security.py
    assert closed == pytest.approx(0.910, abs=0.001)
    assert beta < closed - 0.2


def test_advantage_grows_with_steps_and_falls_with_noise() -> None:
    q = 0.01
    by_steps = [membership_advantage(1.0, q, t).advantage for t in (10, 100, 1000)]
    by_noise = [membership_advantage(s, q, 500).advantage for s in (0.6, 1.0, 2.0, 8.0)]
    assert by_steps == sorted(by_steps)
    assert by_noise == sorted(by_noise, reverse=True)
    for sigma in (0.6, 2.0):
        add = membership_advantage(sigma, q, 500, "add_remove").advantage
        assert membership_advantage(sigma, q, 500, "substitution").advantage > add


def test_the_grid_follows_the_loss_scale_and_is_recorded() -> None:
    assert advantage_interval(0.4, 0.002) == 1e-3  # the accountant's step: its PLD is reused
    assert advantage_interval(5.0, 0.002) == pytest.approx(1e-4)
    assert advantage_interval(1000.0, 1e-5) == 1e-6
    assert advantage_interval(0.4, 0.002, coarsest=1e-4) == 1e-4
    result = membership_advantage(5.0, 0.002, 100)
    assert isinstance(result, MembershipAdvantage)
    assert result.value_discretization_interval == pytest.approx(1e-4)
    assert (result.steps, result.sampling_rate, result.neighbouring) == (100, 0.002, "add_remove")


def test_no_noise_is_full_advantage_and_bad_input_is_named() -> None:
    assert membership_advantage(0.0, 0.1, 10).advantage == 1.0
    with pytest.raises(InvalidInputError, match=r"Found 'replace_one'\.$"):
        membership_advantage(1.0, 0.1, 10, "replace_one")
    with pytest.raises(InvalidInputError, match="sampling_rate"):
        membership_advantage(1.0, 0.0, 10)
    with pytest.raises(InvalidInputError, match="steps"):
        membership_advantage(1.0, 0.1, 0)
