"""How often the default's two shape checks pass, per loss shape.

``tails-shape-tested`` (the default) extrapolates Gaussian-shift tails only where the binormal
ROC curve of all records has slope 1 (:mod:`epsstar.statistics.fitting.roc_slope`) and keeps
its shift into the tails (:mod:`epsstar.statistics.fitting.roc_bend`). For each pair of laws,
``--repeats`` draws of ``--n`` records a side: the share that passes the slope check, the share
of those that the bend check stops, the share that takes the Gaussian-shift tails, and the
bend statistic at each end (mean and sd over the draws; standard errors, so about N(0, 1)
where the curve is straight).

    python benchmarks/roc_shape_checks.py                    # about 1 minute
    python benchmarks/roc_shape_checks.py --repeats 20 --n 3000
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from epsstar import __version__
from epsstar.cli.common.text_table import aligned_table
from epsstar.statistics.fitting.roc_bend import tail_bend
from epsstar.statistics.fitting.roc_slope import roc_slope

Draw = Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]]


def _shift(sample: Callable[[np.random.Generator, int], np.ndarray], by: float) -> Draw:
    """Training ~ law, population ~ law + ``by`` (members lower)."""
    return lambda rng, n: (sample(rng, n), sample(rng, n) + by)


def _scale(sample: Callable[[np.random.Generator, int], np.ndarray], by: float) -> Draw:
    return lambda rng, n: (sample(rng, n), by * sample(rng, n))


def _gamma(d: float) -> Draw:
    """The Epsilon* paper's Appendix-B pair: Gamma(2, 5) against Gamma(2 + d, 5)."""
    return lambda rng, n: (rng.gamma(2.0, 5.0, n), rng.gamma(2.0 + d, 5.0, n))


SHAPES: dict[str, Draw] = {
    **{
        f"gaussian mechanism mu={mu:g}": _shift(lambda rng, n: rng.normal(0.0, 1.0, n), mu)
        for mu in (0.0, 0.1, 0.25, 0.5, 1.0)
    },
    "lognormal s=1, scale x1.6": _scale(lambda rng, n: rng.lognormal(0.0, 1.0, n), 1.6),
    "student t3 shift 0.5": _shift(lambda rng, n: rng.standard_t(3, n), 0.5),
    "student t5 shift 0.5": _shift(lambda rng, n: rng.standard_t(5, n), 0.5),
    "logistic shift 0.5": _shift(lambda rng, n: rng.logistic(0.0, 1.0, n), 0.5),
    "laplace shift 0.5": _shift(lambda rng, n: rng.laplace(0.0, 1.0, n), 0.5),
    **{f"gamma(2,5) vs gamma({2 + d:g},5)": _gamma(d) for d in (0.5, 1.0, 3.0)},
    "weibull k=1.5, scale x1.3": _scale(lambda rng, n: rng.weibull(1.5, n), 1.3),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"epsstar {__version__}; n={args.n:,} a side, repeats={args.repeats}, seed={args.seed}\n")
    start = time.perf_counter()
    rows = [
        [
            "shape",
            "slope 1",
            "bent (of those)",
            "Gaussian-shift tails",
            "bend lower (mean ± sd)",
            "bend upper (mean ± sd)",
        ]
    ]
    for index, (name, draw) in enumerate(SHAPES.items()):
        rng = np.random.default_rng([args.seed, index])
        slopes, bends = [], []
        for _ in range(args.repeats):
            train, population = draw(rng, args.n)
            slopes.append(roc_slope(train, population).near_one)
            bends.append(tail_bend(train, population))
        passed = np.array(slopes)
        straight = np.array([bend.straight for bend in bends])
        lower = np.array([bend.lower for bend in bends])
        upper = np.array([bend.upper for bend in bends])
        bent = f"{np.mean(~straight[passed]):.0%}" if passed.any() else "-"
        rows.append(
            [
                name,
                f"{passed.mean():.0%}",
                bent,
                f"{np.mean(passed & straight):.0%}",
                f"{lower.mean():+.2f} ± {lower.std():.2f}",
                f"{upper.mean():+.2f} ± {upper.std():.2f}",
            ]
        )
        print(f"  done {name}")
    print()
    print(aligned_table(rows))
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
