"""Release gate: false-alarm rate and power of each gate rule (``--gate``).

Each repeat draws ``n`` training and ``n`` population losses, runs the audit's
statistics (the ``tails-crossfit`` estimate, which the ``significant`` gate counts when
the leak test finds a leak and ``tails-tested`` then reports; the held-out Clopper-Pearson
bound and the exact leak test, at the default δ = 1/(n ln n) and confidence 0.95) and asks,
for each rule of :data:`epsstar.statistics.names.GATES` and each limit, whether the
gate fails. Three kinds of cell:

- ``no leak``: both sides from one distribution (true Epsilon* = 0); the share of
  failed gates is the false-alarm rate. Shapes: Normal, Gamma(2, 5), Student t(3),
  and the logit losses of a real model (logistic regression on UCI Adult; both sides
  drawn with replacement from its 16,281 population records' losses, ties included).
- ``limit - 0.5``: a leak whose true Epsilon* is half a nat below the limit (still a
  false alarm when the gate fails); shapes Normal and Gamma.
- ``limit + 1``: a leak whose true Epsilon* is one nat above the limit; the share of
  failed gates is the power. Shapes Normal and Gamma.

Leaks are location shifts: Normal(0, 1) vs Normal(μ, 1) and Gamma(2, 5) vs Gamma(2 + d, 5),
with μ or d solved so that the true Epsilon* (from the known CDFs) is the target.

    python benchmarks/release_gate.py                     # about 40 minutes on 2 cores
    python benchmarks/release_gate.py --repeats 20 --ns 1000 10000
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from functools import cache

import numpy as np
from numpy.typing import NDArray
from scipy import optimize, stats

from epsstar import __version__
from epsstar.cli.common.text_table import aligned_table
from epsstar.exceptions import PoorFitWarning
from epsstar.statistics.bounds.gate import gate_statistic
from epsstar.statistics.bounds.held_out_bound import split_lower_bound
from epsstar.statistics.bounds.leak_test import held_out_leak_test
from epsstar.statistics.estimators.estimator import default_delta, epsilon_star
from epsstar.statistics.estimators.optimizer import parametric_supremum
from epsstar.statistics.names import GATES

Draw = Callable[[np.random.Generator, int], NDArray[np.float64]]


@cache
def adult_pool() -> NDArray[np.float64]:
    """Logit losses of a logistic regression fitted to UCI Adult, on its population rows."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from epsstar.statistics.losses import compute_losses
    from epsstar.training.data.datasets import adult

    data = adult()
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    model.fit(data.train_features, data.train_labels)
    scores = model.decision_function(data.population_features)
    return compute_losses(data.population_labels, scores, outputs="logits")


def truth_normal(mu: float, delta: float) -> float:
    return parametric_supremum(stats.norm(0, 1), stats.norm(mu, 1), delta).epsilon


def truth_gamma(d: float, delta: float) -> float:
    return parametric_supremum(
        stats.gamma(2.0, scale=5.0), stats.gamma(2.0 + d, scale=5.0), delta
    ).epsilon


def solve(
    truth: Callable[[float, float], float], target: float, delta: float, high: float
) -> float:
    """The shift whose true Epsilon* at ``delta`` is ``target``."""
    return float(optimize.brentq(lambda s: truth(s, delta) - target, 1e-4, high, xtol=1e-10))


def sides(shape: str, shift: float) -> tuple[Draw, Draw]:
    """Samplers of the training and population losses."""
    if shape == "normal":
        return (lambda r, n: r.normal(0.0, 1.0, n)), (lambda r, n: r.normal(shift, 1.0, n))
    if shape == "gamma":
        return (lambda r, n: r.gamma(2.0, 5.0, n)), (lambda r, n: r.gamma(2.0 + shift, 5.0, n))
    if shape == "student-t(3)":
        return (lambda r, n: r.standard_t(3, n)), (lambda r, n: r.standard_t(3, n))
    pool = adult_pool()
    return (lambda r, n: r.choice(pool, n)), (lambda r, n: r.choice(pool, n))


def one_repeat(job: tuple[str, float, int, int, int]) -> tuple[float, float, float]:
    """(estimate, lower bound, leak p-value) of one repeat."""
    shape, shift, n, repeat, seed = job
    draw_train, draw_population = sides(shape, shift)
    rng = np.random.default_rng([seed, n, repeat, sum(map(ord, shape)), int(shift * 1e6)])
    train, population = draw_train(rng, n), draw_population(rng, n)
    delta = default_delta(n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PoorFitWarning)
        estimate = epsilon_star(
            train, population, delta=delta, seed=repeat, method="tails-crossfit"
        ).epsilon
    bound = split_lower_bound(train, population, delta=delta, seed=repeat)
    leak = held_out_leak_test(train, population, seed=repeat)
    return (
        estimate,
        bound.epsilon,
        gate_statistic("significant", estimate, bound, leak).leak_p_value,
    )


def failures(results: NDArray[np.float64], limit: float, level: float) -> dict[str, float]:
    """Share of repeats whose gate fails, per rule."""
    estimate, bound, p_value = results.T
    return {
        "significant": float(np.mean((estimate > limit) & (p_value < level))),
        "estimate": float(np.mean(estimate > limit)),
        "lower-bound": float(np.mean(bound > limit)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--limits", type=float, nargs="+", default=[0.5, 1.0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    level = 0.05
    print(
        f"epsstar {__version__}; repeats={args.repeats} seed={args.seed}; "
        f"delta = 1/(n ln n); confidence 0.95 (leak test level {level})\n"
    )
    start = time.perf_counter()
    cells: list[tuple[str, str, float, float, int]] = []  # (kind, shape, limit, shift, n)
    for n in args.ns:
        delta = default_delta(n)
        for shape in ("normal", "gamma", "student-t(3)", "adult logreg"):
            cells.append(("no leak", shape, float("nan"), 0.0, n))
        for limit in args.limits:
            for kind, target in (("limit - 0.5", limit - 0.5), ("limit + 1", limit + 1.0)):
                if target <= 0:
                    continue
                cells.append((kind, "normal", limit, solve(truth_normal, target, delta, 3.0), n))
                cells.append((kind, "gamma", limit, solve(truth_gamma, target, delta, 5.0), n))
    rows = [
        ["cell", "shape", "n", "limit", "true eps*", "mean eps*", *(f"fail: {g}" for g in GATES)]
    ]
    with ProcessPoolExecutor(args.workers) as pool:
        for kind, shape, limit, shift, n in cells:
            jobs = [(shape, shift, n, r, args.seed) for r in range(args.repeats)]
            results = np.array(list(pool.map(one_repeat, jobs, chunksize=4)))
            delta = default_delta(n)
            truth = (
                0.0
                if kind == "no leak"
                else (truth_normal if shape == "normal" else truth_gamma)(shift, delta)
            )
            limits = args.limits if kind == "no leak" else [limit]
            for lim in limits:
                rates = failures(results, lim, level)
                rows.append(
                    [
                        kind,
                        shape,
                        f"{n:,}",
                        f"{lim:g}",
                        f"{truth:.2f}",
                        f"{results[:, 0].mean():.3f}",
                        *(f"{rates[g]:.1%}" for g in GATES),
                    ]
                )
            print(
                f"  done {kind} {shape} n={n:,} ({time.perf_counter() - start:.0f} s)", flush=True
            )
    print("\n" + aligned_table(rows))
    print(f"\nTotal {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
