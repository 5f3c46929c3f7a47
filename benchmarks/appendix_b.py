"""Reproduce Appendix B of the Epsilon* paper: estimators against the true Epsilon*.

Training losses ~ Gamma(2, 5), population losses ~ Gamma(2 + d, 5), n records
each, d in {0, 1, 2, 3}, n in {1e3, 1e4, 1e5}, delta in {1e-5, 1e-3}. The truth
comes from the known Gamma CDFs. Prints mean ± sd over repeats for each
estimator, the mean error against the truth, and the speed of the refined
supremum search against the paper's 2-million-point grid on the same fits.

    python benchmarks/appendix_b.py                 # the full grid, 5 repeats
    python benchmarks/appendix_b.py --repeats 2 --ns 1000 10000
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
import warnings

import numpy as np

from epsstar import __version__, epsilon_star
from epsstar.cli.common.text_table import aligned_table, format_table
from epsstar.exceptions import PoorFitWarning
from epsstar.statistics.estimators.optimizer import grid_supremum, parametric_supremum
from epsstar.statistics.fitting import Reflected
from epsstar.statistics.simulation import ESTIMATORS, Cell, run_appendix_b

DEFAULT_COLUMNS = (
    "empirical",
    "empirical (0.001, 0.999)",
    "paper normal, 2M grid",
    "normal, refined (paper's)",
    "tails",
    "tails-crossfit",
)


def error_table(cells: list[Cell]) -> str:
    names = list(cells[0].estimates)
    header = ["d", "n", "delta", *(f"err {name}" for name in names)]
    rows = [header]
    for cell in cells:
        rows.append(
            [f"{cell.d:g}", f"{cell.n:,}", f"{cell.delta:g}"]
            + [f"{cell.mean(name) - cell.truth:+.3f}" for name in names]
        )
    return aligned_table(rows)


def speed_table(ns: list[int], deltas: list[float], repeats: int, seed: int) -> str:
    """Refined search vs the 2M-point grid on the same Normal fits (d = 2)."""
    rows = [["n", "delta", "refined ms", "grid ms", "speed-up", "refined - grid (nats)"]]
    rng = np.random.default_rng(seed)
    for n in ns:
        train, population = rng.gamma(2, 5, n), rng.gamma(4, 5, n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PoorFitWarning)
            fits = epsilon_star(train, population, delta=1e-5, method="parametric").fits
        a, b = Reflected(fits["train"].fit), Reflected(fits["population"].fit)
        for delta in deltas:
            refined_times, grid_times, gaps = [], [], []
            for _ in range(repeats):
                start = time.perf_counter()
                refined = parametric_supremum(a, b, delta)
                refined_times.append(time.perf_counter() - start)
                start = time.perf_counter()
                grid = grid_supremum(a, b, delta)
                grid_times.append(time.perf_counter() - start)
                gaps.append(refined.epsilon - grid.epsilon)
            r, g = statistics.median(refined_times), statistics.median(grid_times)
            rows.append(
                [
                    f"{n:,}",
                    f"{delta:g}",
                    f"{r * 1e3:.2f}",
                    f"{g * 1e3:.0f}",
                    f"{g / r:.0f}x",
                    f"{min(gaps):+.2e}",
                ]
            )
    return aligned_table(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ds", type=float, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--ns", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--deltas", type=float, nargs="+", default=[1e-5, 1e-3])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--estimators", nargs="+", default=list(DEFAULT_COLUMNS), choices=list(ESTIMATORS)
    )
    args = parser.parse_args()

    print(f"epsstar {__version__}, Python {platform.python_version()}, {platform.machine()}")
    print(f"d={args.ds} n={args.ns} delta={args.deltas} repeats={args.repeats} seed={args.seed}\n")
    start = time.perf_counter()
    cells = run_appendix_b(
        ds=args.ds,
        ns=args.ns,
        deltas=args.deltas,
        repeats=args.repeats,
        estimators=args.estimators,
        seed=args.seed,
        on_cell=lambda cell: print(
            f"  done d={cell.d:g} n={cell.n:,} delta={cell.delta:g}", flush=True
        ),
    )
    print("\nEpsilon* (mean ± sd over repeats)\n")
    print(format_table(cells))
    print("\nMean error against the truth (nats)\n")
    print(error_table(cells))
    if "normal, refined (paper's)" in args.estimators:
        print("\nShare of repeats whose Normal fit was flagged poor (either side)\n")
        for cell in cells:
            share = cell.poor_fit_share("normal, refined (paper's)")
            print(f"  d={cell.d:g} n={cell.n:>7,} delta={cell.delta:g}: {share:.0%}")
    print(
        "\nSupremum search: refined vs the paper's 2-million-point grid "
        "(same Normal fits, d = 2, median of repeats)\n"
    )
    print(speed_table(args.ns, args.deltas, max(args.repeats, 3), args.seed))
    print(f"\nTotal {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
