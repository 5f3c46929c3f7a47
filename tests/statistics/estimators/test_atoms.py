"""The atoms estimator: the hull supremum against independent computations, and what it
reads where nothing leaks, where a model memorises, and where the two sides separate."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from epsstar import epsilon_star
from epsstar.statistics.bounds.held_out_bound import split_lower_bound
from epsstar.statistics.estimators.atoms import atoms_supremum, law_vertices
from epsstar.statistics.estimators.estimator import default_delta
from epsstar.statistics.estimators.optimizer import parametric_supremum


def brute_force(train_mass: np.ndarray, population_mass: np.ndarray, delta: float) -> float:
    """Eq. 7 over every mix of two threshold tests (any two, not only hull neighbours), at
    weights spaced geometrically towards both ends (neighbours 0.8 % apart), each ratio
    where its denominator rate is at least δ."""
    fpr = np.concatenate([[0.0], np.cumsum(population_mass)])
    fnr = 1.0 - np.concatenate([[0.0], np.cumsum(train_mass)])
    ends = np.geomspace(1e-7, 0.5, 2000)
    weights = np.concatenate([[0.0], ends, 1.0 - ends, [1.0]])
    best = 0.0
    for i, j in itertools.combinations_with_replacement(range(fpr.size), 2):
        t = weights * fpr[i] + (1 - weights) * fpr[j]
        eta = weights * fnr[i] + (1 - weights) * fnr[j]
        for numerator, denominator in (
            (1 - delta - eta, t),
            (1 - delta - t, eta),
            (eta - delta, 1 - t),
            (t - delta, 1 - eta),
        ):
            ok = (denominator >= delta) & (denominator < 1 - delta) & (numerator > 0)
            if ok.any():
                best = max(best, float(np.max(np.log(numerator[ok] / denominator[ok]))))
    return best


masses = st.lists(st.integers(0, 20), min_size=2, max_size=6).filter(lambda m: sum(m) > 0)


@settings(max_examples=40, deadline=None)
@given(train=masses, population=masses, delta=st.sampled_from([1e-3, 0.01, 0.05, 0.2]))
def test_the_hull_supremum_is_the_best_mix_of_two_thresholds(
    train: list[int], population: list[int], delta: float
) -> None:
    size = max(len(train), len(population))
    a = np.array(train + [0] * (size - len(train)), dtype=float)
    b = np.array(population + [0] * (size - len(population)), dtype=float)
    a, b = a / a.sum(), b / b.sum()
    found, _ = atoms_supremum(law_vertices(np.arange(size, dtype=float), a, b), delta)
    expected = brute_force(a, b, delta)
    # The hull sees every mix exactly, so it is never below the brute force; the brute
    # force's nearest admissible weight to the best one is at most 0.8 % off in the
    # denominator's rate (all rates here ≥ 1e-3 ≫ the grid's 1e-7 end), which moves the
    # log ratio by at most log(1.008) < 0.01 nats.
    assert found.epsilon >= expected - 1e-12
    assert found.epsilon <= expected + 0.01


def test_a_finely_discretised_continuous_pair_has_the_continuous_truth() -> None:
    # N(0, 1) against N(0.5, 1) cut into 20,000 cells: the hull of the cells converges to the
    # continuous supremum that the refined search finds (an independent computation).
    edges = np.linspace(-9.0, 9.5, 20_001)
    train, population = stats.norm(0.0, 1.0), stats.norm(0.5, 1.0)

    def mass(law: Any) -> np.ndarray:
        cells = np.diff(law.cdf(edges))
        cells[0] += law.cdf(edges[0])
        cells[-1] += law.sf(edges[-1])
        return np.asarray(cells)

    for delta in (1e-3, 1e-5):
        found, _ = atoms_supremum(law_vertices(edges[1:], mass(train), mass(population)), delta)
        continuous = parametric_supremum(train, population, delta).epsilon
        assert found.epsilon == pytest.approx(continuous, abs=1e-6)


def test_the_randomised_test_beats_every_plain_threshold() -> None:
    # Three atoms. "Members at the first" has FPR 0.01 < δ, inadmissible in the first
    # ratio; "members at the first two" has FPR 0.6 and FNR 0.1, ratio 0.85/0.6. Calling
    # the second atom's records members at random reaches FPR δ exactly, at FNR
    # 0.5 - 0.4·(δ - 0.01)/0.59, where (1 - δ - FNR)/FPR is far larger.
    delta = 0.05
    vertices = law_vertices(
        np.array([0.0, 1.0, 2.0]), np.array([0.5, 0.4, 0.1]), np.array([0.01, 0.59, 0.4])
    )
    found, test = atoms_supremum(vertices, delta)
    assert test is not None
    assert test.low != test.high
    fnr = 0.5 - 0.4 * (delta - 0.01) / 0.59
    assert found.epsilon == pytest.approx(math.log((1 - delta - fnr) / delta))
    assert found.epsilon > math.log(0.85 / 0.6) + 1.0
    assert found.fpr == pytest.approx(delta)
    assert found.fnr == pytest.approx(fnr)


@pytest.mark.parametrize("levels", [5, 40, 101])
@pytest.mark.parametrize("n", [2_000, 20_000])
def test_identical_discrete_laws_read_zero(levels: int, n: int) -> None:
    # Nothing leaks: the default's mean over 40 audits stays ≤ 0.05 and at most 5 % of them
    # exceed 0.1 (a leak test at level 0.05 rejects in about 5 % of them; a stricter share
    # than 10 % would fail by chance: P(Binomial(40, 0.05) > 4) ≈ 0.05).
    mass = 1.0 + np.arange(levels) / levels
    mass /= mass.sum()
    found = []
    for seed in range(40):
        rng = np.random.default_rng([seed, levels, n])
        train = rng.choice(levels, n, p=mass).astype(float)
        population = rng.choice(levels, n, p=mass).astype(float)
        result = epsilon_star(train, population, delta=default_delta(n), seed=seed)
        assert result.method == "atoms-tested"
        found.append(result.epsilon)
    values = np.array(found)
    assert values.mean() <= 0.05
    assert np.mean(values > 0.1) <= 0.10


def test_a_separable_pair_reads_well_above_zero_at_every_delta() -> None:
    # N(0, 1) against N(3.2, 1), 200 a side: no threshold keeps both rates in (δ, 1 − δ) at
    # δ = 0.05 in these samples, yet a test with FNR ≈ 0 at FPR > δ is evidence.
    rng = np.random.default_rng(0)
    train, population = rng.normal(0.0, 1.0, 200), rng.normal(3.2, 1.0, 200)
    for delta in (0.05, 0.01, 1e-3):
        headline = epsilon_star(train, population, delta=delta)
        empirical = epsilon_star(train, population, delta=delta, method="empirical")
        bound = split_lower_bound(train, population, delta=delta, seed=0)
        truth = parametric_supremum(stats.norm(0, 1), stats.norm(3.2, 1), delta).epsilon
        assert headline.epsilon > 2.0
        assert empirical.epsilon > 2.0
        assert bound.epsilon > 0.5
        # The bound may exceed the headline: it counts tests whose denominator rate lies
        # below δ, which Epsilon* leaves out (the gate then compares the bound).
        assert abs(headline.epsilon - truth) < 1.0
