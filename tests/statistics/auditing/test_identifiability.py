"""The DI adversary's readings (Bernau et al. 2021, "Quantifying identifiability to choose and audit
ε in differentially private deep learning") against hand computations."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.auditing.identifiability import (
    IdentifiabilityReading,
    identifiability_reading,
)


def test_readings_match_the_papers_formulas_on_a_small_case() -> None:
    # Log posterior odds for D' (with the canary); canaries 0, 1 included, 2, 3 not.
    odds = np.array([2.0, -0.5, -1.0, 0.3])
    included = np.array([True, True, False, False])
    reading = identifiability_reading(odds, included, claimed_epsilon=1.0, delta=1e-5)
    truth = np.array([2.0, -0.5, 1.0, -0.3])  # belief in the true data set, as log-odds
    assert reading.wins == 2
    assert reading.advantage == 0.0  # 2 wins of 4: no better than a coin
    assert reading.epsilon_from_advantage is None
    assert reading.epsilon_from_belief == truth.max()
    assert reading.max_belief == pytest.approx(1.0 / (1.0 + math.exp(-2.0)), rel=1e-15)
    # Theorem 2: rho_beta = 1/(1 + e^-eps); Theorem 3: rho_alpha = 2 Phi(eps / (2 c)) - 1.
    assert reading.rho_beta == pytest.approx(1.0 / (1.0 + math.exp(-1.0)), rel=1e-12)
    c = math.sqrt(2.0 * math.log(1.25 / 1e-5))
    assert reading.rho_alpha == pytest.approx(2.0 * stats.norm.cdf(1.0 / (2.0 * c)) - 1.0)
    # delta': the share of experiments whose belief in the truth exceeds rho_beta (log-odds 1).
    assert reading.delta_observed == pytest.approx(0.25)


def test_epsilon_from_the_advantage_inverts_theorem_3() -> None:
    odds = np.array([1.0, 1.0, 1.0, -1.0, -1.0, 1.0, -1.0, -1.0])
    included = np.array([True, True, True, True, False, False, False, False])
    reading = identifiability_reading(odds, included, claimed_epsilon=2.0, delta=1e-5)
    assert reading.advantage == pytest.approx(0.5)  # 6 wins of 8
    c = math.sqrt(2.0 * math.log(1.25 / 1e-5))
    # The exact inverse of Theorem 3 (the paper's eq. (6) drops the factor 2), and it maps back.
    epsilon = reading.epsilon_from_advantage
    assert epsilon == pytest.approx(2.0 * c * stats.norm.ppf(0.75), rel=1e-9)
    assert 2.0 * stats.norm.cdf(epsilon / (2.0 * c)) - 1.0 == pytest.approx(0.5, rel=1e-12)


def test_mismatched_lengths_are_refused() -> None:
    with pytest.raises(InvalidInputError):
        identifiability_reading([0.0, 1.0], [True], claimed_epsilon=1.0, delta=1e-5)


def test_the_record_keeps_its_inputs() -> None:
    reading = identifiability_reading([0.5, -0.5, 2.0], [1, 0, 1], claimed_epsilon=1.5, delta=1e-4)
    assert (reading.experiments, reading.claimed_epsilon, reading.delta) == (3, 1.5, 1e-4)


def test_one_experiment_is_enough_and_none_is_refused() -> None:
    reading = identifiability_reading([1.0], [True], claimed_epsilon=1.0, delta=1e-5)
    assert (reading.experiments, reading.wins, reading.advantage) == (1, 1, 1.0)
    with pytest.raises(InvalidInputError, match=r"^log_odds needs at least 1 values\. Found 0"):
        identifiability_reading([], [], claimed_epsilon=1.0, delta=1e-5)


def test_a_belief_of_one_half_is_no_win() -> None:
    # Log-odds 0 is a belief of exactly 1/2 in each data set: the adversary does not win.
    reading = identifiability_reading([0.0, 0.0, 1.0], [1, 0, 1], claimed_epsilon=1.0, delta=1e-5)
    assert reading.wins == 1
    assert reading.advantage == pytest.approx(2.0 / 3.0 - 1.0, abs=1e-15)


def test_every_experiment_won_has_no_epsilon_from_the_advantage() -> None:
    # Advantage 1: Phi^-1(1) is infinite, so the record says None.
    reading = identifiability_reading([1.0, -1.0], [1, 0], claimed_epsilon=1.0, delta=1e-5)
    assert reading.advantage == 1.0
    assert reading.epsilon_from_advantage is None


def test_a_claim_whose_belief_bound_rounds_to_one() -> None:
    # 1/(1 + e^-50) is 1.0 in float64: no finite belief exceeds it.
    reading = identifiability_reading([3.0, -2.0], [1, 0], claimed_epsilon=50.0, delta=1e-5)
    assert reading.rho_beta == 1.0
    assert reading.delta_observed == 0.0


def test_a_vanishing_best_belief_reads_zero() -> None:
    # The best belief in the truth is sigma(-800) < 1e-347, below the smallest float64.
    reading = identifiability_reading([800.0, 900.0], [0, 0], claimed_epsilon=1.0, delta=1e-5)
    assert reading.epsilon_from_belief == -800.0
    assert reading.max_belief == 0.0


def test_the_record_as_json() -> None:
    reading = identifiability_reading([0.5, -0.5, 2.0], [1, 0, 1], claimed_epsilon=1.5, delta=1e-4)
    record = json.loads(json.dumps(reading.to_dict()))
    assert record["experiments"] == 3
    assert record["wins"] == 3  # the beliefs in the truth: log-odds 0.5, 0.5, 2
    assert record["epsilon_from_belief"] == 2.0
    assert set(record) == set(IdentifiabilityReading.__dataclass_fields__)
