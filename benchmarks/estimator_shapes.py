"""Estimators against the true Epsilon* on loss shapes other than Appendix B's Gamma pair.

Each pair is (training law, population law), both known, so the truth is their
Epsilon* by the same supremum search. Prints the mean error against the truth
for each estimator, n and δ (repeats share samples across estimators and δ).

    python benchmarks/estimator_shapes.py                    # about 5 minutes
    python benchmarks/estimator_shapes.py --repeats 2 --ns 1000
"""

from __future__ import annotations

import argparse
import time

from scipy import stats

from epsstar import __version__
from epsstar.cli.common.text_table import aligned_table
from epsstar.statistics.simulation import COMPARED_ESTIMATORS, ESTIMATORS, run_pairs

PAIRS = {
    "lognormal s=1, scale x1.6": (stats.lognorm(1.0), stats.lognorm(1.0, scale=1.6)),
    "weibull k=1.5, scale x1.3": (stats.weibull_min(1.5), stats.weibull_min(1.5, scale=1.3)),
    "gamma(2,5) vs gamma(2,7)": (stats.gamma(2.0, scale=5.0), stats.gamma(2.0, scale=7.0)),
    "normal shift 0.5": (stats.norm(-0.5), stats.norm(0.0)),
    "student t3 shift 0.5": (stats.t(3, loc=-0.5), stats.t(3)),
    "lognormal identical": (stats.lognorm(1.0), stats.lognorm(1.0)),
    "student t5 shift 0.5": (stats.t(5, loc=-0.5), stats.t(5)),
    "logistic shift 0.5": (stats.logistic(-0.5), stats.logistic(0.0)),
    "laplace shift 0.5": (stats.laplace(-0.5), stats.laplace(0.0)),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--deltas", type=float, nargs="+", default=[1e-5, 1e-3])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--estimators",
        nargs="+",
        default=list(COMPARED_ESTIMATORS),
        choices=list(ESTIMATORS),
    )
    args = parser.parse_args()
    print(f"epsstar {__version__}; repeats={args.repeats} seed={args.seed}\n")
    start = time.perf_counter()
    cells = run_pairs(
        PAIRS,
        ns=args.ns,
        deltas=args.deltas,
        repeats=args.repeats,
        estimators=args.estimators,
        seed=args.seed,
        on_cell=lambda label, cell: print(f"  done {label} n={cell.n:,} delta={cell.delta:g}"),
    )
    header = ["pair", "n", "delta", "true eps*", *(f"err {name}" for name in args.estimators)]
    rows = [header]
    for label, cell in cells:
        rows.append(
            [label, f"{cell.n:,}", f"{cell.delta:g}", f"{cell.truth:.3f}"]
            + [f"{cell.mean(name) - cell.truth:+.3f}" for name in args.estimators]
        )
    print("\nMean error against the truth (nats)\n")
    print(aligned_table(rows))
    print(f"\nTotal {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
