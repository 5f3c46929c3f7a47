"""Estimators against the exact Epsilon* on losses with atoms, and on Gaussian-mechanism shapes.

Every cell is a pair of known laws, so its truth is exact:

- identical laws on K levels (K = 5, 40, 101; truth 0): trees, k-NN, rounded outputs where
  nothing leaks;
- binomial counts, Binomial(20, 0.45) against Binomial(20, 0.5): a discrete leak;
- a Normal shift rounded to one decimal, N(0, 1) against N(0.5, 1): quantised outputs;
- mixed: an atom at the lowest loss (40 % of training and 30 % of population records, as
  saturated correct predictions give) and a Gamma body, Gamma(2, 1) against Gamma(2.5, 1);
- the Gaussian mechanism's shape, N(0, 1) against N(μ, 1), μ ∈ {0.1, 0.25, 0.5, 1}: weak
  to moderate leaks, whose ε* at δ follows from the μ-GDP curve.

The truth of a discrete pair is the supremum of eq. 7 over the convex hull of its exact
(FPR, FNR) points (:func:`epsstar.statistics.estimators.atoms.law_vertices`); the mixed
pair's continuous body is discretised on 20,000 quantile cells (the same computation
reproduces the continuous Normal pair's truth to 1e-7 nats, tests/statistics/estimators);
the continuous pairs' is
:func:`~epsstar.statistics.estimators.optimizer.parametric_supremum` of the laws. δ is
1/(n ln n). Prints, per cell and estimator, the mean estimate, its mean error, its sd,
the share of audits above the truth + 0.25 and, where the truth is 0, the share above 0.1.

    python benchmarks/estimator_discrete.py     # 100 repeats per cell: about 4 min on 2 cores
    python benchmarks/estimator_discrete.py --repeats 10 --cells binomial
    python benchmarks/estimator_discrete.py --estimators tails-tested tails-shape-tested
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from epsstar import __version__
from epsstar.cli.common.text_table import aligned_table
from epsstar.statistics.estimators.atoms import atoms_supremum, law_vertices
from epsstar.statistics.estimators.estimator import default_delta, epsilon_star
from epsstar.statistics.estimators.optimizer import parametric_supremum

ESTIMATORS = (
    "tails-tested",
    "tails-shape-tested",
    "atoms-tested",
    "atoms-crossfit",
    "tails-crossfit",
    "empirical",
    "parametric",
)
Sampler = Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Shape:
    """A pair of known laws: how to draw n records a side, and the exact Epsilon*."""

    name: str
    draw: Sampler
    truth: Callable[[float], float]


def _levels(k: int) -> Shape:
    mass = 1.0 + np.arange(k) / k
    mass /= mass.sum()

    def draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        return (rng.choice(k, n, p=mass).astype(float), rng.choice(k, n, p=mass).astype(float))

    return Shape(f"identical, {k} levels", draw, lambda delta: 0.0)


def _binomial() -> Shape:
    support = np.arange(21, dtype=float)
    # Members have the lower loss: the training law puts more mass on small counts.
    train_mass, pop_mass = stats.binom(20, 0.45).pmf(support), stats.binom(20, 0.5).pmf(support)

    def draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        return rng.binomial(20, 0.45, n).astype(float), rng.binomial(20, 0.5, n).astype(float)

    def truth(delta: float) -> float:
        return atoms_supremum(law_vertices(support, train_mass, pop_mass), delta)[0].epsilon

    return Shape("binomial 20: p 0.45 vs 0.5", draw, truth)


def _rounded_normal() -> Shape:
    values = np.round(np.arange(-90, 101) / 10.0, 1)
    edges = np.append(values - 0.05, values[-1] + 0.05)

    def mass(law: Any) -> np.ndarray:
        cells = np.diff(law.cdf(edges))
        cells[0] += law.cdf(edges[0])
        cells[-1] += law.sf(edges[-1])
        return np.asarray(cells)

    train_law, pop_law = stats.norm(0.0, 1.0), stats.norm(0.5, 1.0)

    def draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        a, b = rng.normal(0.0, 1.0, n), rng.normal(0.5, 1.0, n)
        return np.clip(np.round(a, 1), -9.0, 10.0), np.clip(np.round(b, 1), -9.0, 10.0)

    def truth(delta: float) -> float:
        vertices = law_vertices(values, mass(train_law), mass(pop_law))
        return atoms_supremum(vertices, delta)[0].epsilon

    return Shape("normal shift 0.5, rounded to 0.1", draw, truth)


def _mixed() -> Shape:
    share_train, share_pop = 0.4, 0.3
    train_body, pop_body = stats.gamma(2.0), stats.gamma(2.5)
    cells = 20_000
    levels = np.linspace(0.0, 1.0, cells + 1)
    edges = np.unique(np.concatenate([train_body.ppf(levels), pop_body.ppf(levels)]))
    edges = edges[np.isfinite(edges)]

    def draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        def side(share: float, body: Any) -> np.ndarray:
            values = np.asarray(body.rvs(n, random_state=rng), dtype=float)
            values[rng.random(n) < share] = 0.0  # the atom, below every body loss
            return values

        return side(share_train, train_body), side(share_pop, pop_body)

    def truth(delta: float) -> float:
        def mass(share: float, body: Any) -> np.ndarray:
            inner = np.diff(body.cdf(edges)) * (1.0 - share)
            inner[-1] += body.sf(edges[-1]) * (1.0 - share)
            return np.concatenate([[share], inner])

        points = np.concatenate([[0.0], edges[1:]])
        vertices = law_vertices(points, mass(share_train, train_body), mass(share_pop, pop_body))
        return atoms_supremum(vertices, delta)[0].epsilon

    return Shape("mixed: atom 40 % vs 30 %, gamma 2 vs 2.5", draw, truth)


def _gaussian(mu: float) -> Shape:
    def draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        return rng.normal(0.0, 1.0, n), rng.normal(mu, 1.0, n)

    def truth(delta: float) -> float:
        return parametric_supremum(stats.norm(0.0, 1.0), stats.norm(mu, 1.0), delta).epsilon

    return Shape(f"gaussian mechanism mu={mu:g}", draw, truth)


SHAPES: dict[str, list[Shape]] = {
    "identical": [_levels(5), _levels(40), _levels(101)],
    "binomial": [_binomial()],
    "rounded": [_rounded_normal()],
    "mixed": [_mixed()],
    "gaussian": [_gaussian(mu) for mu in (0.1, 0.25, 0.5, 1.0)],
}
DEFAULT_NS = {"gaussian": (10_000,)}


def one_repeat(job: tuple[str, int, int, int, int, tuple[str, ...]]) -> list[float]:
    """Each named estimator's Epsilon* on one draw of cell (group, index) with n records a
    side."""
    group, index, n, repeat, seed, names = job
    shape = SHAPES[group][index]
    rng = np.random.default_rng([seed, n, repeat, index, len(group)])
    train, population = shape.draw(rng, n)
    delta = default_delta(n)
    found = []
    for name in names:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = epsilon_star(train, population, delta=delta, method=name, seed=repeat)  # type: ignore[arg-type]
        found.append(result.epsilon)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", type=int, nargs="+", default=[2_000, 20_000])
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cells", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--estimators", nargs="+", default=list(ESTIMATORS), choices=ESTIMATORS)
    args = parser.parse_args()
    names = tuple(args.estimators)
    print(f"epsstar {__version__}; repeats={args.repeats} seed={args.seed}; delta = 1/(n ln n)\n")
    start = time.perf_counter()
    rows = [
        [
            "cell",
            "n",
            "delta",
            "true eps*",
            "estimator",
            "mean",
            "error",
            "sd",
            "> truth+0.25",
            "> 0.1",
        ]
    ]
    with ProcessPoolExecutor(args.workers) as pool:
        for group in args.cells:
            ns = DEFAULT_NS.get(group, tuple(args.ns))
            for index, shape in enumerate(SHAPES[group]):
                for n in ns:
                    jobs = [(group, index, n, r, args.seed, names) for r in range(args.repeats)]
                    found = np.array(list(pool.map(one_repeat, jobs)))
                    delta = default_delta(n)
                    truth = shape.truth(delta)
                    for column, name in enumerate(names):
                        values = found[:, column]
                        above = np.mean(values > truth + 0.25)
                        rows.append(
                            [
                                shape.name,
                                f"{n:,}",
                                f"{delta:.2g}",
                                f"{truth:.3f}",
                                name,
                                f"{values.mean():.3f}",
                                f"{values.mean() - truth:+.3f}",
                                f"{values.std(ddof=1):.3f}",
                                f"{above:.0%}",
                                f"{np.mean(values > 0.1):.0%}" if truth == 0 else "",
                            ]
                        )
                    print(f"  done {shape.name} n={n:,}", flush=True)
    print()
    print(aligned_table(rows))
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
