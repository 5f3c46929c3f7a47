"""The Appendix-B simulation (§8.1) of the Epsilon* paper.

The paper is Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models".

Training losses are drawn from Gamma(k, θ) and population losses from
Gamma(k + d, θ) (k = 2, θ = 5 in the paper); the true Epsilon* follows from the
known Gamma CDFs with the same optimiser used for fitted distributions, and
each estimator is compared with it over repeated samples.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from epsstar.exceptions import PoorFitWarning
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.estimators.empirical import PAPER_EMPIRICAL_WINDOW
from epsstar.statistics.estimators.estimator import estimate
from epsstar.statistics.estimators.methods import (
    Empirical,
    EstimatorConfig,
    Parametric,
    Tails,
    TailsCrossfit,
    TailsShapeTested,
    TailsTested,
)
from epsstar.statistics.estimators.optimizer import parametric_supremum

__all__ = [
    "DEMO_ESTIMATORS",
    "ESTIMATORS",
    "Cell",
    "Estimate",
    "run_appendix_b",
    "run_pairs",
    "true_epsilon",
]

Estimator = Callable[[FloatArray, FloatArray, float, int], "Estimate"]


@dataclass(frozen=True, slots=True)
class Estimate:
    epsilon: float
    seconds: float
    poor_fit: bool = False


def true_epsilon(d: float, delta: float, *, shape: float = 2.0, scale: float = 5.0) -> float:
    """Epsilon* of Gamma(shape, scale) training vs Gamma(shape + d, scale) population losses."""
    train = stats.gamma(shape, scale=scale)
    population = stats.gamma(shape + d, scale=scale)
    return parametric_supremum(train, population, delta).epsilon


def _timed(config: EstimatorConfig) -> Estimator:
    def timed(train: FloatArray, population: FloatArray, delta: float, seed: int) -> Estimate:
        start = time.perf_counter()
        with warnings.catch_warnings():
            # A poor fit is counted in the table instead of printed per repeat.
            warnings.simplefilter("ignore", PoorFitWarning)
            result = estimate(train, population, config, delta=delta, seed=seed)
        return Estimate(result.epsilon, time.perf_counter() - start, result.poor_fit)

    return timed


#: Estimators by column name, in table order.
ESTIMATORS: dict[str, Estimator] = {
    "empirical": _timed(Empirical()),
    "empirical (0.001, 0.999)": _timed(
        Empirical(rate_window=(PAPER_EMPIRICAL_WINDOW.low, PAPER_EMPIRICAL_WINDOW.high))
    ),
    "paper normal, 2M grid": _timed(Parametric(family="normal", search="grid")),
    "normal, refined (paper's)": _timed(Parametric(family="normal")),
    "gmm, refined": _timed(Parametric(family="gmm")),
    "tails": _timed(Tails()),
    "tails-crossfit": _timed(TailsCrossfit()),
    "tails-tested": _timed(TailsTested()),
    "tails-shape-tested": _timed(TailsShapeTested()),
}
#: The estimators the benchmarks compare by default (not the slow grid and mixture columns).
COMPARED_ESTIMATORS: tuple[str, ...] = (
    "empirical",
    "empirical (0.001, 0.999)",
    "normal, refined (paper's)",
    "tails",
    "tails-crossfit",
    "tails-tested",
)
#: What the ``epsstar simulate`` command prints: the compared estimators and the default,
#: ``tails-shape-tested``, without the slow grid and mixture columns.
DEMO_ESTIMATORS: tuple[str, ...] = (*COMPARED_ESTIMATORS, "tails-shape-tested")


def _estimates(
    names: tuple[str, ...],
    samples: list[tuple[FloatArray, FloatArray]],
    delta: float,
    seed: int,
) -> dict[str, tuple[Estimate, ...]]:
    """Each named estimator on each (train, population) sample; sample r uses seed + r."""
    return {
        name: tuple(
            ESTIMATORS[name](train, population, delta, seed + r)
            for r, (train, population) in enumerate(samples)
        )
        for name in names
    }


@dataclass(frozen=True, slots=True)
class Cell:
    """Mean and sd over repeats of each estimator for one (d, n, δ)."""

    d: float
    n: int
    delta: float
    truth: float
    estimates: Mapping[str, tuple[Estimate, ...]] = field(default_factory=dict)

    def mean(self, name: str) -> float:
        return float(np.mean([e.epsilon for e in self.estimates[name]]))

    def sd(self, name: str) -> float:
        values = [e.epsilon for e in self.estimates[name]]
        return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0

    def seconds(self, name: str) -> float:
        return float(np.mean([e.seconds for e in self.estimates[name]]))

    def poor_fit_share(self, name: str) -> float:
        return float(np.mean([e.poor_fit for e in self.estimates[name]]))


def run_appendix_b(
    *,
    ds: Iterable[float] = (0, 1, 2, 3),
    ns: Iterable[int] = (1_000, 10_000, 100_000),
    deltas: Iterable[float] = (1e-5, 1e-3),
    repeats: int = 5,
    estimators: Iterable[str] = tuple(ESTIMATORS),
    seed: int = 0,
    shape: float = 2.0,
    scale: float = 5.0,
    on_cell: Callable[[Cell], None] | None = None,
) -> list[Cell]:
    """Run every (d, n, δ) cell; the same samples feed every estimator and both δ."""
    names = tuple(estimators)
    deltas = tuple(deltas)
    cells: list[Cell] = []
    for d in ds:
        for n in ns:
            rng = np.random.default_rng([seed, int(d * 1000), n])
            samples = [
                (rng.gamma(shape, scale, n), rng.gamma(shape + d, scale, n)) for _ in range(repeats)
            ]
            for delta in deltas:
                estimates = _estimates(names, samples, delta, seed)
                cell = Cell(
                    d=d,
                    n=n,
                    delta=delta,
                    truth=true_epsilon(d, delta, shape=shape, scale=scale),
                    estimates=estimates,
                )
                cells.append(cell)
                if on_cell is not None:
                    on_cell(cell)
    return cells


def run_pairs(
    pairs: Mapping[str, tuple[Any, Any]],
    *,
    ns: Iterable[int] = (1_000, 10_000, 100_000),
    deltas: Iterable[float] = (1e-5, 1e-3),
    repeats: int = 5,
    estimators: Iterable[str] = tuple(ESTIMATORS),
    seed: int = 0,
    on_cell: Callable[[str, Cell], None] | None = None,
) -> list[tuple[str, Cell]]:
    """Like :func:`run_appendix_b` for any named (train, population) pair of known laws.

    Each law is a ``scipy.stats`` frozen distribution (``rvs``, ``logcdf``,
    ``logsf``, ``ppf``, ``isf``); the truth is their Epsilon* by
    :func:`~epsstar.statistics.estimators.optimizer.parametric_supremum`. ``Cell.d`` is the pair's
    index.
    """
    names = tuple(estimators)
    deltas = tuple(deltas)
    cells: list[tuple[str, Cell]] = []
    for index, (label, (train_law, population_law)) in enumerate(pairs.items()):
        for n in ns:
            rng = np.random.default_rng([seed, index, n])
            samples = [
                (
                    np.asarray(train_law.rvs(n, random_state=rng), dtype=np.float64),
                    np.asarray(population_law.rvs(n, random_state=rng), dtype=np.float64),
                )
                for _ in range(repeats)
            ]
            for delta in deltas:
                estimates = _estimates(names, samples, delta, seed)
                truth = parametric_supremum(train_law, population_law, delta).epsilon
                cell = Cell(d=index, n=n, delta=delta, truth=truth, estimates=estimates)
                cells.append((label, cell))
                if on_cell is not None:
                    on_cell(label, cell)
    return cells
