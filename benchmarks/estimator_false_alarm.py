"""Release-gate false alarms: how often Epsilon* exceeds a limit when nothing leaks.

Training and population losses come from the *same* distribution (Gamma(2, 5)
and standard Normal losses), so the true Epsilon* is 0. For each estimator,
n and limit, the table shows the share of repeats whose Epsilon* exceeds the
limit at the paper's δ = 1/(n ln n), and the mean Epsilon*.

    python benchmarks/estimator_false_alarm.py                  # about 4 minutes
    python benchmarks/estimator_false_alarm.py --repeats 20 --ns 1000 10000
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from epsstar import __version__
from epsstar.cli.common.text_table import aligned_table
from epsstar.statistics.estimators.estimator import default_delta
from epsstar.statistics.simulation import COMPARED_ESTIMATORS, ESTIMATORS

LAWS: dict[str, Callable[[np.random.Generator, int], NDArray[np.float64]]] = {
    "gamma(2,5)": lambda rng, n: rng.gamma(2.0, 5.0, n),
    "normal": lambda rng, n: rng.normal(0.0, 1.0, n),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--limits", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--estimators",
        nargs="+",
        default=list(COMPARED_ESTIMATORS),
        choices=list(ESTIMATORS),
    )
    args = parser.parse_args()
    print(f"epsstar {__version__}; repeats={args.repeats} seed={args.seed}; delta = 1/(n ln n)\n")
    start = time.perf_counter()
    header = [
        "law",
        "n",
        "delta",
        "estimator",
        "mean eps*",
        *(f"P(eps* > {x:g})" for x in args.limits),
    ]
    rows = [header]
    for law_index, (law, draw) in enumerate(LAWS.items()):
        for n in args.ns:
            delta = default_delta(n)
            rng = np.random.default_rng([args.seed, law_index, n])
            samples = [(draw(rng, n), draw(rng, n)) for _ in range(args.repeats)]
            for name in args.estimators:
                values = np.array(
                    [
                        ESTIMATORS[name](a, b, delta, args.seed + r).epsilon
                        for r, (a, b) in enumerate(samples)
                    ]
                )
                rows.append(
                    [law, f"{n:,}", f"{delta:.2g}", name, f"{values.mean():.3f}"]
                    + [f"{np.mean(values > x):.0%}" for x in args.limits]
                )
            print(f"  done {law} n={n:,}", flush=True)
    print("\n" + aligned_table(rows))
    print(f"\nTotal {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
