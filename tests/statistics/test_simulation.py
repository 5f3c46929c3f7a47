"""The Appendix-B simulation (``epsstar/statistics/simulation.py``; §8.1 of Negoescu et al.
2024, "Epsilon*: Privacy Metric for Machine Learning Models"): the true
Epsilon* of two Gamma laws against a maximisation of the Definition-2 ratios written here with
scipy, two Normal laws against the same maximisation, and the simulation's cells, seeds and
summaries by hand."""

from __future__ import annotations

import math
import statistics
import warnings
from typing import Any

import numpy as np
import pytest
from scipy import optimize, stats

from epsstar.exceptions import PoorFitWarning
from epsstar.statistics.estimators.estimator import estimate
from epsstar.statistics.estimators.methods import Empirical, Parametric
from epsstar.statistics.names import DEFAULT_METHOD
from epsstar.statistics.simulation import (
    COMPARED_ESTIMATORS,
    DEMO_ESTIMATORS,
    ESTIMATORS,
    Cell,
    Estimate,
    run_appendix_b,
    run_pairs,
    true_epsilon,
)


def _definition_2(train: Any, population: Any, delta: float) -> float:
    """sup over thresholds τ of the log of eq. 7's ratios, with t = FPR = F_pop(τ) and
    η = FNR = 1 − F_train(τ) both in (δ, 1 − δ) (Negoescu et al., footnote 2): a grid over the
    thresholds allowed, then a bounded search around the best point."""

    def values(tau: Any) -> Any:
        t, eta = population.cdf(tau), train.sf(tau)
        ratios = [(1 - delta - eta) / t, (1 - delta - t) / eta, (eta - delta) / (1 - t)]
        ratios += [(t - delta) / (1 - eta), np.ones_like(t)]
        return np.log(np.max(ratios, axis=0))

    low = max(population.ppf(delta), train.ppf(delta))
    high = min(population.isf(delta), train.isf(delta))
    grid = np.linspace(low, high, 20_001)
    on_grid = values(grid)
    best = int(np.argmax(on_grid))
    left, right = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    found = optimize.minimize_scalar(
        lambda g: -float(values(g)),
        bounds=(left, right),
        method="bounded",
        options={"xatol": 1e-12},
    )
    return max(float(on_grid[best]), -found.fun)


@pytest.mark.parametrize(
    ("d", "delta", "shape", "scale"),
    [(1.0, 1e-3, 2.0, 5.0), (2.0, 1e-5, 2.0, 5.0), (3.0, 1e-5, 2.0, 5.0), (0.5, 1e-2, 3.0, 1.0)],
)
def test_true_epsilon_of_gamma_laws(d: float, delta: float, shape: float, scale: float) -> None:
    found = true_epsilon(d, delta, shape=shape, scale=scale)
    expected = _definition_2(
        stats.gamma(shape, scale=scale), stats.gamma(shape + d, scale=scale), delta
    )
    # two maximisers of one smooth function: 1e-6 relative is their search tolerance
    assert found == pytest.approx(expected, rel=1e-6)
    assert found > 0.1


def test_true_epsilon_defaults_and_identical_laws() -> None:
    # the paper's k = 2, θ = 5
    assert true_epsilon(1.0, 1e-3) == true_epsilon(1.0, 1e-3, shape=2.0, scale=5.0)
    assert true_epsilon(1.0, 1e-3) != true_epsilon(1.0, 1e-3, shape=3.0, scale=5.0)
    # d = 0: the same law on both sides, nothing to tell apart
    assert true_epsilon(0.0, 1e-5) == pytest.approx(0.0, abs=1e-9)  # the optimiser's tolerance


def test_run_pairs_truth_and_samples_follow_the_seed() -> None:
    pairs = {
        "one": (stats.norm(0, 1), stats.norm(1, 1)),
        "two": (stats.norm(0, 1), stats.norm(2, 1)),
    }
    seen: list[tuple[str, Cell]] = []
    cells = run_pairs(
        pairs,
        ns=(300,),
        deltas=(1e-3, 1e-2),
        repeats=2,
        estimators=("empirical",),
        seed=4,
        on_cell=lambda label, cell: seen.append((label, cell)),
    )
    assert cells == seen
    assert [(label, c.d, c.n, c.delta) for label, c in cells] == [
        ("one", 0, 300, 1e-3),
        ("one", 0, 300, 1e-2),
        ("two", 1, 300, 1e-3),
        ("two", 1, 300, 1e-2),
    ]
    for (label, cell), mu in zip(cells, (1, 1, 2, 2), strict=True):
        expected = _definition_2(stats.norm(0, 1), stats.norm(mu, 1), cell.delta)
        # two maximisers of one smooth function: 1e-6 relative is their search tolerance
        assert cell.truth == pytest.approx(expected, rel=1e-6), label
    # the samples: rng [seed, pair index, n], train then population, per repeat; repeat r
    # is estimated with seed + r
    rng = np.random.default_rng([4, 1, 300])
    for r in range(2):
        train = stats.norm(0, 1).rvs(300, random_state=rng)
        population = stats.norm(2, 1).rvs(300, random_state=rng)
        expected = estimate(train, population, Empirical(), delta=1e-2, seed=4 + r).epsilon
        assert cells[3][1].estimates["empirical"][r].epsilon == expected


def test_run_appendix_b_cells_samples_and_seeds() -> None:
    seen: list[Cell] = []
    cells = run_appendix_b(
        ds=(0.0, 1.5),
        ns=(200, 300),
        deltas=(1e-3,),
        repeats=3,
        estimators=("empirical", "tails"),
        seed=9,
        shape=3.0,
        scale=2.0,
        on_cell=seen.append,
    )
    assert cells == seen
    assert [(c.d, c.n, c.delta) for c in cells] == [
        (0.0, 200, 1e-3),
        (0.0, 300, 1e-3),
        (1.5, 200, 1e-3),
        (1.5, 300, 1e-3),
    ]
    cell = cells[3]
    assert set(cell.estimates) == {"empirical", "tails"}
    assert cell.truth == true_epsilon(1.5, 1e-3, shape=3.0, scale=2.0)
    # the samples: rng [seed, 1000·d, n]; Gamma(shape, scale) then Gamma(shape + d, scale)
    rng = np.random.default_rng([9, 1500, 300])
    draws = [(rng.gamma(3.0, 2.0, 300), rng.gamma(4.5, 2.0, 300)) for _ in range(3)]
    for r, (train, population) in enumerate(draws):
        expected = estimate(train, population, Empirical(), delta=1e-3, seed=9 + r).epsilon
        found = cell.estimates["empirical"][r]
        assert found.epsilon == expected
        assert found.seconds > 0.0


def test_run_appendix_b_defaults_to_the_paper_s_gamma() -> None:
    (cell,) = run_appendix_b(
        ds=(1,), ns=(150,), deltas=(1e-2,), repeats=1, estimators=("empirical",)
    )
    rng = np.random.default_rng([0, 1000, 150])
    train, population = rng.gamma(2.0, 5.0, 150), rng.gamma(3.0, 5.0, 150)
    assert cell.truth == true_epsilon(1, 1e-2)
    expected = estimate(train, population, Empirical(), delta=1e-2, seed=0).epsilon
    assert cell.estimates["empirical"][0].epsilon == expected


def test_cell_summaries_by_hand() -> None:
    estimates = {
        "a": (Estimate(1.0, 0.5, False), Estimate(2.0, 1.5, True), Estimate(6.0, 1.0, True)),
        "b": (Estimate(4.0, 2.0),),
        "c": (Estimate(1.0, 0.0), Estimate(3.0, 0.0)),
    }
    cell = Cell(d=1.0, n=10, delta=1e-3, truth=2.5, estimates=estimates)
    assert cell.mean("a") == 3.0
    assert cell.sd("a") == pytest.approx(statistics.stdev([1.0, 2.0, 6.0]), rel=1e-15)
    assert cell.seconds("a") == 1.0
    assert cell.poor_fit_share("a") == pytest.approx(2 / 3, rel=1e-15)
    assert cell.sd("c") == pytest.approx(math.sqrt(2), rel=1e-15)  # two repeats: |3 − 1|/√2
    # one repeat: no spread to speak of
    assert cell.sd("b") == 0.0
    assert cell.poor_fit_share("b") == 0.0
    assert Cell(d=0.0, n=1, delta=0.1, truth=0.0).estimates == {}


def test_estimators_are_the_documented_methods_and_count_poor_fits() -> None:
    assert list(ESTIMATORS)[:2] == ["empirical", "empirical (0.001, 0.999)"]
    assert set(COMPARED_ESTIMATORS) <= set(ESTIMATORS)
    assert set(COMPARED_ESTIMATORS) <= set(DEMO_ESTIMATORS) <= set(ESTIMATORS)
    assert DEFAULT_METHOD in DEMO_ESTIMATORS  # epsstar simulate shows the default
    rng = np.random.default_rng(3)
    # a Normal fit to Gamma(0.5) losses is poor: counted, not warned
    train, population = rng.gamma(0.5, 1.0, 800), rng.gamma(0.8, 1.0, 800)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PoorFitWarning)
        normal = ESTIMATORS["normal, refined (paper's)"](train, population, 1e-3, 5)
    reference = (
        estimate(train, population, Parametric(family="normal"), delta=1e-3, seed=5, interval=False)
        if False
        else None
    )
    del reference
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PoorFitWarning)
        direct = estimate(train, population, Parametric(family="normal"), delta=1e-3, seed=5)
    assert normal.epsilon == direct.epsilon
    assert normal.poor_fit is True
    assert direct.poor_fit is True
    windowed = ESTIMATORS["empirical (0.001, 0.999)"](train, population, 1e-3, 5)
    expected = estimate(
        train, population, Empirical(rate_window=(0.001, 0.999)), delta=1e-3, seed=5
    ).epsilon
    assert windowed.epsilon == expected
    assert windowed.poor_fit is False
