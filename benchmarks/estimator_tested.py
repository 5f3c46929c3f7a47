"""tails-tested against tails-crossfit: the estimate where nothing leaks, and where something does.

``tails-tested`` is the ``tails-crossfit`` estimate when the held-out exact leak test
(``epsstar/statistics/bounds/leak_test.py``) finds a leak at level 0.05, else 0. Each cell draws
``n`` training and ``n`` population losses ``--repeats`` times and prints the truth, the
mean of both estimators and of ``tails-shape-tested`` (the same test, the tails' shape chosen
by the slope of the ROC curve), their mean errors, and how often the leak test rejects:

- no leak: Gamma(2, 5) or Normal(0, 1) on both sides, δ = 1/(n ln n) (truth 0);
- Appendix B: Gamma(2, 5) vs Gamma(2 + d, 5), d ∈ {1, 2, 3}, δ ∈ {1e-5, 1e-3};
- small leaks: Normal(0, 1) vs Normal(μ, 1), μ ∈ {0.1, 0.2}, δ = 1/(n ln n).

    python benchmarks/estimator_tested.py                  # about 15 minutes on 2 cores
    python benchmarks/estimator_tested.py --repeats 20 --ns 1000
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from scipy import stats

from epsstar import __version__
from epsstar.cli.common.text_table import aligned_table
from epsstar.exceptions import PoorFitWarning
from epsstar.statistics.estimators.estimator import default_delta, epsilon_star
from epsstar.statistics.estimators.optimizer import parametric_supremum
from epsstar.statistics.simulation import true_epsilon

Cell = tuple[str, float, int, float]  # (law, shift, n, delta)


def truth(cell: Cell) -> float:
    law, shift, _, delta = cell
    if shift == 0:
        return 0.0
    if law == "gamma":
        return true_epsilon(shift, delta)
    return parametric_supremum(stats.norm(0, 1), stats.norm(shift, 1), delta).epsilon


def one_repeat(job: tuple[Cell, int, int]) -> tuple[float, float, float, float]:
    """(tails-crossfit, tails-tested, tails-shape-tested, leak p-value) of one repeat."""
    (law, shift, n, delta), repeat, seed = job
    rng = np.random.default_rng([seed, n, repeat, int(shift * 1000), len(law)])
    if law == "gamma":
        train, population = rng.gamma(2.0, 5.0, n), rng.gamma(2.0 + shift, 5.0, n)
    else:
        train, population = rng.normal(0.0, 1.0, n), rng.normal(shift, 1.0, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PoorFitWarning)
        tested = epsilon_star(train, population, delta=delta, method="tails-tested", seed=repeat)
        shaped = epsilon_star(
            train, population, delta=delta, method="tails-shape-tested", seed=repeat
        )
    assert tested.untested_epsilon is not None
    assert tested.leak_p_value is not None
    return tested.untested_epsilon, tested.epsilon, shaped.epsilon, tested.leak_p_value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    print(f"epsstar {__version__}; repeats={args.repeats} seed={args.seed}; leak test level 0.05\n")
    start = time.perf_counter()
    cells: list[tuple[str, Cell]] = []
    for n in args.ns:
        default = default_delta(n)
        cells += [("no leak", ("gamma", 0.0, n, default)), ("no leak", ("normal", 0.0, n, default))]
        if n > 10_000:
            continue  # the leak cells: n = 1e3 and 1e4, as in docs/accuracy.md
        cells += [
            ("Appendix B", ("gamma", float(d), n, delta))
            for d in (1, 2, 3)
            for delta in (1e-5, 1e-3)
        ]
        cells += [("small leak", ("normal", mu, n, default)) for mu in (0.1, 0.2)]
    header = [
        "cell",
        "law",
        "shift",
        "n",
        "delta",
        "n*delta",
        "true eps*",
        "crossfit",
        "tested",
        "shape-tested",
        "crossfit err",
        "tested err",
        "shape-tested err",
        "P(leak found)",
    ]
    rows = [header]
    with ProcessPoolExecutor(args.workers) as pool:
        for kind, cell in cells:
            jobs = [(cell, r, args.seed) for r in range(args.repeats)]
            values = np.array(list(pool.map(one_repeat, jobs, chunksize=4)))
            crossfit, tested, shaped, p_value = values.T
            true_value = truth(cell)
            law, shift, n, delta = cell
            rows.append(
                [
                    kind,
                    law,
                    f"{shift:g}",
                    f"{n:,}",
                    f"{delta:.2g}",
                    f"{n * delta:.3g}",
                    f"{true_value:.3f}",
                    f"{crossfit.mean():.3f}",
                    f"{tested.mean():.3f}",
                    f"{shaped.mean():.3f}",
                    f"{crossfit.mean() - true_value:+.3f}",
                    f"{tested.mean() - true_value:+.3f}",
                    f"{shaped.mean() - true_value:+.3f}",
                    f"{np.mean(p_value < 0.05):.0%}",
                ]
            )
            print(f"  done {kind} {law} shift={shift:g} n={n:,} delta={delta:.2g}", flush=True)
    print("\n" + aligned_table(rows))
    print(f"\nTotal {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
