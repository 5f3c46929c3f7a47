"""Power tails (tails-tested's) against binormal tails, on the Gaussian mechanism's shape and on
the Epsilon* paper's Appendix-B Gamma pairs.

Every tail model extrapolates each side's tail from a fit beyond its ``k``-th most extreme
loss: the power tails make it a power of a pooled generalised-Pareto-tailed fit ``G`` (a power ROC
curve, :mod:`epsstar.statistics.fitting.tails`), the binormal models a normal on a reference
fit's normal scores (a binormal ROC curve, :mod:`epsstar.statistics.fitting.binormal_tails`):

- ``binormal``: reference ``G``, unit scale (the equal-variance binormal curve);
- ``uv-binormal``: reference ``G``, shift and scale fitted on each side's extreme quarter;
- ``binormal-roc``: the binormal ROC curve fitted directly: at each end the side that reaches
  further keeps its power tail, the other side's tail is a normal (shift and scale fitted on
  its extreme quarter) of that side's normal scores;
- ``binormal-roc-wide``: the same with the scale fitted on all of the side's records.

Cells, each with its exact Epsilon* at δ:

- gaussian: N(0, 1) against N(μ, 1), μ ∈ {0.1, 0.25, 0.5, 1}, n = 10,000 a side,
  δ = 1/(n ln n) (the cells of ``estimator_discrete.py --cells gaussian``);
- gamma: Gamma(2, scale 5) against Gamma(2 + d, scale 5), d ∈ {0, 1, 2, 3}, n ∈ {1e3, 1e4},
  δ ∈ {1e-5, 1e-3} (the cells of ``appendix_b.py``).

Estimators, on the same draws and the same random halves:

- ``tails-tested``: the power tails' method; ``tails-crossfit`` its cross-fitted
  estimate before the leak test (its ``untested_epsilon``);
- ``<model>-tested``: the same held-out leak test, then the cross-fitted estimate of the model
  (``crossfit_epsilon`` with its fit); ``<model>-crossfit`` without the test;
- ``pooled-shape-tested``: ``binormal-tested`` where the slope check below passes, else
  ``tails-tested``: the first form of the method ``tails-shape-tested``, computed from the same
  fits (the method now fits the ROC curve directly on each end's half and checks its bend).

Prints per cell and estimator the mean, the mean error against the truth, the sd, the share of
audits above the truth + 0.25 (and above 0.1 where the truth is 0); then, per cell, how often
the lower tails' likelihood (both sides, on their most extreme quarter, one parameter per side
and model) prefers the equal-variance binormal model to the power model, and how often the
binormal ROC curve fitted to all records has a slope within the margin of 1 with two
standard errors to spare (:mod:`epsstar.statistics.fitting.roc_slope`): whether the data
could choose between the two. Last, each model's
shape error alone: its full-sample (plug-in) estimate on ``--shape-repeats`` draws of
``--shape-size`` records a side, where the noise is small, at each cell's δ (n = 10,000 cells
only). ``--size`` draws the n = 10,000 cells at another size (their δ kept).

    python benchmarks/estimator_tail_models.py --repeats 50 --workers 1
    python benchmarks/estimator_tail_models.py --repeats 10 --cells gamma --shape-repeats 0
"""

from __future__ import annotations

import argparse
import math
import os
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy import special, stats

from epsstar import __version__
from epsstar.cli.common.text_table import aligned_table
from epsstar.statistics.estimators.crossfit import PairFitter, crossfit_epsilon
from epsstar.statistics.estimators.estimator import default_delta, epsilon_star
from epsstar.statistics.estimators.methods import DEFAULT_LEVEL
from epsstar.statistics.estimators.optimizer import parametric_supremum
from epsstar.statistics.fitting.binormal_tails import (
    BINORMAL_FIT_SHARE,
    fit_binormal_roc,
    fit_binormal_tails,
    truncated_normal_shift,
)
from epsstar.statistics.fitting.roc_slope import roc_slope
from epsstar.statistics.fitting.tails import TailedEmpirical, fit_relative_tails
from epsstar.statistics.summaries.loss_sketch import as_sample

#: The tail models measured beside the power tails (module doc).
MODELS: dict[str, PairFitter] = {
    "binormal": fit_binormal_tails,
    "uv-binormal": partial(fit_binormal_tails, scale_share=BINORMAL_FIT_SHARE),
    "binormal-roc": fit_binormal_roc,
    "binormal-roc-wide": partial(fit_binormal_roc, scale_share=1.0),
}
ESTIMATORS = (
    "tails-tested",
    *(f"{model}-tested" for model in MODELS),
    "pooled-shape-tested",
    "tails-crossfit",
    *(f"{model}-crossfit" for model in MODELS),
)
Sampler = Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Cell:
    """A pair of known laws at one size and δ: how to draw them, and the exact Epsilon*."""

    name: str
    n: int
    delta: float
    draw: Sampler
    truth: float


def _gaussian(mu: float) -> list[Cell]:
    n = 10_000
    delta = default_delta(n)

    def draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        return rng.normal(0.0, 1.0, n), rng.normal(mu, 1.0, n)

    truth = parametric_supremum(stats.norm(0.0, 1.0), stats.norm(mu, 1.0), delta).epsilon
    return [Cell(f"gaussian mu={mu:g}", n, delta, draw, truth)]


def _gamma(d: int) -> list[Cell]:
    def draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        return rng.gamma(2.0, 5.0, n), rng.gamma(2.0 + d, 5.0, n)

    train, population = stats.gamma(2.0, scale=5.0), stats.gamma(2.0 + d, scale=5.0)
    return [
        Cell(f"gamma d={d}", n, delta, draw, parametric_supremum(train, population, delta).epsilon)
        for n in (1_000, 10_000)
        for delta in (1e-5, 1e-3)
    ]


CELLS: dict[str, list[Cell]] = {
    "gaussian": [cell for mu in (0.1, 0.25, 0.5, 1.0) for cell in _gaussian(mu)],
    "gamma": [cell for d in (0, 1, 2, 3) for cell in _gamma(d)],
}


def _lower_tail_preference(train: np.ndarray, population: np.ndarray) -> float:
    """Log-likelihood of the binormal model minus the power model's, on both sides' lowest
    :data:`BINORMAL_FIT_SHARE` of records (one fitted parameter per side and model; the
    pooled density's terms, common to both, left out)."""
    reference = TailedEmpirical.fit(np.concatenate([train, population]))
    difference = 0.0
    for side in (train, population):
        values = np.sort(side)
        wide = math.floor(BINORMAL_FIT_SHARE * values.size)
        levels = reference.logcdf(values[: wide + 1])
        excess = levels[wide] - levels[:wide]
        excess = excess[np.isfinite(excess)]
        power = excess.size * (math.log(excess.size / excess.sum()) - 1.0) + excess.sum()
        scores = special.ndtri_exp(np.minimum(levels, 0.0))
        cut = float(scores[wide])
        shift = truncated_normal_shift(scores[:wide], cut)

        def log_likelihood(m: float, z: np.ndarray = scores[:wide], cut: float = cut) -> float:
            return float(np.sum(-0.5 * (z - m) ** 2) - z.size * special.log_ndtr(cut - m))

        difference += log_likelihood(shift) - log_likelihood(0.0) - power
    return difference


def one_repeat(job: tuple[str, int, int, int, int]) -> list[float]:
    """Each estimator's Epsilon* on one draw of ``n`` records a side of a cell, then the
    likelihood preference."""
    group, index, n, repeat, seed = job
    cell = CELLS[group][index]
    rng = np.random.default_rng([seed, n, repeat, index, len(group)])
    train, population = cell.draw(rng, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default = epsilon_star(
            train, population, delta=cell.delta, method="tails-tested", seed=repeat
        )
        models = [
            crossfit_epsilon(train, population, cell.delta, fit, seed=repeat).epsilon
            for fit in MODELS.values()
        ]
    assert default.leak_test is not None
    assert default.untested_epsilon is not None
    leak = default.leak_test.p_value < DEFAULT_LEVEL
    tested = [default.epsilon, *(value if leak else 0.0 for value in models)]
    slope_one = float(roc_slope(train, population).near_one)
    return [
        *tested,
        tested[list(MODELS).index("binormal") + 1] if slope_one else default.epsilon,
        default.untested_epsilon,
        *models,
        slope_one,
        _lower_tail_preference(train, population),
    ]


def shape_error(job: tuple[str, int, int, int, int]) -> list[float]:
    """Each tail model's full-sample (plug-in) Epsilon* minus the truth, on one draw of
    ``size`` records a side of a cell: the error of its shape, with little noise."""
    group, index, size, repeat, seed = job
    cell = CELLS[group][index]
    drawn = cell.draw(np.random.default_rng([seed, size, repeat, index]), size)
    train, population = as_sample(drawn[0]), as_sample(drawn[1])
    fits: list[PairFitter] = [fit_relative_tails, *MODELS.values()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [
            parametric_supremum(*fit(train, population), cell.delta).epsilon - cell.truth
            for fit in fits
        ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cells", nargs="+", default=list(CELLS), choices=list(CELLS))
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--shape-size", type=int, default=200_000)
    parser.add_argument(
        "--size", type=int, default=0, help="draw the n = 10,000 cells at this many a side"
    )
    parser.add_argument("--shape-repeats", type=int, default=2)
    args = parser.parse_args()
    print(f"epsstar {__version__}; repeats={args.repeats} seed={args.seed}\n")
    start = time.perf_counter()
    header = ["cell", "n", "delta", "true eps*", "estimator", "mean", "error", "sd"]
    rows = [[*header, "> truth+0.25", "> 0.1"]]
    preferences = [
        ["cell", "n", "delta", "binormal likelier (lower tails)", "slope within margin of 1"]
    ]
    shapes = [["cell", "size", "delta", "true eps*", *(f"{m} error" for m in ["tails", *MODELS])]]
    with ProcessPoolExecutor(args.workers) as pool:
        for group in args.cells:
            for index, cell in enumerate(CELLS[group]):
                if args.size and cell.n != 10_000:
                    continue
                n = args.size or cell.n
                jobs = [(group, index, n, r, args.seed) for r in range(args.repeats)]
                found = np.array(list(pool.map(one_repeat, jobs)))
                for column, name in enumerate(ESTIMATORS):
                    values = found[:, column]
                    rows.append(
                        [
                            cell.name,
                            f"{n:,}",
                            f"{cell.delta:.2g}",
                            f"{cell.truth:.3f}",
                            name,
                            f"{values.mean():.3f}",
                            f"{values.mean() - cell.truth:+.3f}",
                            f"{values.std(ddof=1):.3f}",
                            f"{np.mean(values > cell.truth + 0.25):.0%}",
                            f"{np.mean(values > 0.1):.0%}" if cell.truth == 0 else "",
                        ]
                    )
                preferences.append(
                    [
                        cell.name,
                        f"{n:,}",
                        f"{cell.delta:.2g}",
                        f"{np.mean(found[:, -1] > 0):.0%}",
                        f"{np.mean(found[:, -2]):.0%}",
                    ]
                )
                print(f"  done {cell.name} n={n:,} delta={cell.delta:.2g}", flush=True)
                if args.shape_repeats and cell.n == 10_000:
                    size = args.shape_size
                    jobs2 = [(group, index, size, r, args.seed) for r in range(args.shape_repeats)]
                    errors = np.array(list(pool.map(shape_error, jobs2))).mean(axis=0)
                    shapes.append(
                        [
                            cell.name,
                            f"{size:,}",
                            f"{cell.delta:.2g}",
                            f"{cell.truth:.3f}",
                            *(f"{error:+.3f}" for error in errors),
                        ]
                    )
    print()
    print(aligned_table(rows))
    print()
    print(aligned_table(preferences))
    if len(shapes) > 1:
        print(f"\nshape error: plug-in estimate minus truth, mean of {args.shape_repeats} draws")
        print(aligned_table(shapes))
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
