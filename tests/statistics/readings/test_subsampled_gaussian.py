"""The Monte Carlo of the subsampled Gaussian's advantage
(``epsstar/statistics/readings/subsampled_gaussian.py``): against the same draws scored by
``scipy.stats.norm`` densities, and against the closed forms of one step (total variation of
the mixtures) and of the full batch (μ-GDP, Dong, Roth & Su 2022, "Gaussian
Differential Privacy")."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.readings.subsampled_gaussian import advantage_monte_carlo


def _by_densities(
    q: float, sigma: float, steps: int, neighbouring: str, samples: int, seed: int
) -> tuple[float, float]:
    """The estimator written from the mixture densities, on the draws the module makes (per
    step: the Bernoulli(q) inclusions, then the standard normal noise)."""
    rng = np.random.default_rng(seed)
    loss = np.zeros(samples)
    for _ in range(steps):
        included = rng.random(samples) < q
        noise = rng.standard_normal(samples) * sigma
        if neighbouring == "add_remove":
            x = noise + included
            p = (1 - q) * norm.pdf(x, 0, sigma) + q * norm.pdf(x, 1, sigma)
            other = norm.pdf(x, 0, sigma)
        else:
            x = noise - included
            p = (1 - q) * norm.pdf(x, 0, sigma) + q * norm.pdf(x, -1, sigma)
            other = (1 - q) * norm.pdf(x, 0, sigma) + q * norm.pdf(x, 1, sigma)
        loss += np.log(p) - np.log(other)
    gain = np.clip(1 - np.exp(-loss), 0, None)
    return float(np.mean(gain)), float(np.std(gain) / math.sqrt(samples))


@pytest.mark.parametrize("neighbouring", ["add_remove", "substitution"])
@pytest.mark.parametrize(("q", "sigma", "steps"), [(0.3, 2.0, 3), (0.05, 0.8, 5), (1.0, 1.5, 2)])
def test_the_same_draws_scored_by_scipy_densities(
    q: float, sigma: float, steps: int, neighbouring: str
) -> None:
    found = advantage_monte_carlo(q, sigma, steps, neighbouring, 2_000, seed=5)
    expected = _by_densities(q, sigma, steps, neighbouring, 2_000, seed=5)
    # log-sum-exp against densities for |x| ≤ ~10σ: rounding only
    assert found == pytest.approx(expected, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize(("q", "sigma"), [(0.3, 1.0), (0.1, 0.5), (0.8, 2.0)])
def test_one_step_is_q_times_the_gaussian_distance(q: float, sigma: float) -> None:
    # One step: δ(0) is the total variation, q·(2Φ(|a − b|/(2σ)) − 1) with |a − b| = 1 for
    # add/remove and 2 for substitution (the shared (1 − q)·N(0, σ²) cancels).
    for neighbouring, distance in (("add_remove", 1.0), ("substitution", 2.0)):
        estimate, error = advantage_monte_carlo(q, sigma, 1, neighbouring, 200_000, seed=1)
        exact = q * (2 * norm.cdf(distance / (2 * sigma)) - 1)
        # 5 standard errors: a false alarm once in ~2 million seeds; the error is ≤ 1e-3
        assert estimate == pytest.approx(exact, abs=5 * error)
        assert 0 < error < 1.5e-3


@pytest.mark.parametrize(("sigma", "steps"), [(2.0, 4), (4.0, 9)])
def test_full_batch_is_gaussian_dp(sigma: float, steps: int) -> None:
    # q = 1: T steps of N(1, σ²) vs N(0, σ²) compose to μ = √T/σ; δ(0) = 2Φ(μ/2) − 1.
    mu = math.sqrt(steps) / sigma
    estimate, error = advantage_monte_carlo(1.0, sigma, steps, "add_remove", 200_000, seed=2)
    # 5 standard errors, as above
    assert estimate == pytest.approx(2 * norm.cdf(mu / 2) - 1, abs=5 * error)


def test_the_seed_and_the_standard_error() -> None:
    first = advantage_monte_carlo(0.2, 1.0, 2, "substitution", 1_000, seed=3)
    assert first == advantage_monte_carlo(0.2, 1.0, 2, "substitution", 1_000, seed=3)
    assert first != advantage_monte_carlo(0.2, 1.0, 2, "substitution", 1_000, seed=4)
    assert first == advantage_monte_carlo(0.2, 1.0, 2, "substitution", 1_000, 3)
    # the default seed is 0
    assert advantage_monte_carlo(0.2, 1.0, 2, "add_remove", 500) == advantage_monte_carlo(
        0.2, 1.0, 2, "add_remove", 500, seed=0
    )
    # four times the samples: about half the standard error (a sample sd over √n)
    _, small = advantage_monte_carlo(0.2, 1.0, 2, "add_remove", 4_000, seed=3)
    _, large = advantage_monte_carlo(0.2, 1.0, 2, "add_remove", 16_000, seed=3)
    assert large / small == pytest.approx(0.5, rel=0.1)  # sd estimates from 4k and 16k draws


def test_an_unknown_neighbouring_is_refused() -> None:
    with pytest.raises(
        InvalidInputError,
        match=r"^neighbouring must be 'add_remove' or 'substitution'\. Found 'replace'\.$",
    ):
        advantage_monte_carlo(0.1, 1.0, 1, "replace", 10)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0.0, 1.0, 1, 10), r"^q must be in \(0, 1\]\. Found 0\.0\.$"),
        ((1.2, 1.0, 1, 10), r"^q must be in"),
        ((0.1, 0.0, 1, 10), r"^sigma must be in \(0, inf\)\. Found 0\.0\.$"),
        ((0.1, 1.0, 0, 10), r"^steps and samples must be at least 1\. Found 0, 10\.$"),
        ((0.1, 1.0, 1, 0), r"^steps and samples must be at least 1\. Found 1, 0\.$"),
    ],
)
def test_bad_settings_are_refused(args: tuple[float, float, int, int], message: str) -> None:
    q, sigma, steps, samples = args
    with pytest.raises(InvalidInputError, match=message):
        advantage_monte_carlo(q, sigma, steps, "add_remove", samples)


def test_one_sample_is_enough() -> None:
    # one draw: its gain, with a standard error of 0 (the sd of one value)
    estimate, error = advantage_monte_carlo(0.5, 1.0, 1, "add_remove", 1, seed=0)
    assert 0.0 <= estimate < 1.0
    assert error == 0.0
