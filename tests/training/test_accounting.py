"""ε from the accountant, the σ search, and an independent check with opacus."""

from __future__ import annotations

import math

import pytest
from opacus.accountants import PRVAccountant, RDPAccountant

from epsstar.exceptions import InvalidInputError
from epsstar.training.accounting import (
    Accountant,
    default_delta,
    find_noise_multiplier,
    make_accountant,
)

# (target ε, q, steps, δ): the paper's targets at small and large step counts.
GRID = [
    (1.0, 64 / 2000, 310, 1e-4),
    (3.0, 0.01, 1000, 1e-5),
    (10.0, 256 / 20000, 3900, 1e-5),
    (0.5, 0.5, 20, 1e-3),
]


def opacus_epsilon(kind: str, sigma: float, q: float, steps: int, delta: float) -> float:
    accountant = PRVAccountant() if kind == "prv" else RDPAccountant()
    accountant.history = [(sigma, q, steps)]
    return float(accountant.get_epsilon(delta=delta))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Optimal order is the largest alpha")
@pytest.mark.parametrize(("target", "q", "steps", "delta"), GRID)
def test_pld_sigma_meets_target_and_agrees_with_opacus(
    target: float, q: float, steps: int, delta: float
) -> None:
    accountant = make_accountant("pld", target)
    sigma = find_noise_multiplier(accountant, target, delta, q, steps)
    epsilon = accountant.epsilon(sigma, q, steps, delta)
    assert epsilon <= target
    # Smallest σ: 0.2 % less noise already exceeds the target.
    assert accountant.epsilon(sigma / 1.002, q, steps, delta) > target
    # Independent libraries: PRV (opacus) agrees with PLD within a few %, RDP is looser.
    prv = opacus_epsilon("prv", sigma, q, steps, delta)
    rdp = opacus_epsilon("rdp", sigma, q, steps, delta)
    assert prv == pytest.approx(epsilon, rel=0.04)
    assert epsilon <= rdp * 1.005
    assert rdp <= epsilon * 1.35


@pytest.mark.slow
@pytest.mark.parametrize(("target", "q", "steps", "delta"), GRID[:2])
def test_rdp_sigma_meets_target_and_agrees_with_opacus_rdp(
    target: float, q: float, steps: int, delta: float
) -> None:
    accountant = make_accountant("rdp", target)
    sigma = find_noise_multiplier(accountant, target, delta, q, steps)
    epsilon = accountant.epsilon(sigma, q, steps, delta)
    assert epsilon <= target
    assert epsilon == pytest.approx(opacus_epsilon("rdp", sigma, q, steps, delta), rel=0.03)
    pld_sigma = find_noise_multiplier(make_accountant("pld", target), target, delta, q, steps)
    assert pld_sigma < sigma  # PLD is tighter, so it needs less noise for the same target


def test_epsilon_decreases_with_noise() -> None:
    accountant = Accountant("pld")
    values = [accountant.epsilon(s, 0.02, 200, 1e-5) for s in (0.6, 0.8, 1.2, 2.0, 5.0)]
    assert values == sorted(values, reverse=True)
    assert accountant.epsilon(0.0, 0.02, 200, 1e-5) == math.inf


def test_unreachable_target_is_an_input_error() -> None:
    with pytest.raises(InvalidInputError, match=r"cannot be reached .* at most 5"):
        find_noise_multiplier(Accountant("pld"), 0.01, 1e-5, 0.5, 100, max_noise_multiplier=5)


def test_huge_target_stops_at_small_sigma() -> None:
    sigma = find_noise_multiplier(Accountant("rdp"), 1e9, 1e-5, 0.01, 10)
    assert sigma <= 0.02


def test_default_delta_is_one_over_n_log_n() -> None:
    assert default_delta(1000) == pytest.approx(1 / (1000 * math.log(1000)))


def test_unknown_accountant_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="accountant must be one of"):
        Accountant("gdp")


def test_small_targets_get_a_finer_pld_step() -> None:
    assert make_accountant("pld", 0.05).value_discretization_interval == pytest.approx(5e-4)
    assert make_accountant("pld", 10).value_discretization_interval == 1e-3
    described = make_accountant("pld", 1).describe()
    assert described["library"] == "dp-accounting"
    assert described["settings"]["value_discretization_interval"] == 1e-3
