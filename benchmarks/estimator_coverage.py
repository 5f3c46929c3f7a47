"""Coverage of the bootstrap interval for Epsilon* on simulated and on real-model losses.

``--losses gamma`` (the Appendix-B simulation): for each (d, n, δ) cell, ``repeats``
independent Gamma(2, 5) / Gamma(2 + d, 5) samples, the truth from the known CDFs.
``--losses real``: the cached losses of the models of ``estimator_real_losses.py``
(100,000 training and 1,000,000 population records each, trained on a first run), the
truth the Epsilon* of those full sets (the empirical estimator); each repeat draws n
losses per side without replacement. On every sample the estimator's own interval
(``interval=level``, ``n_bootstrap`` resamples: what ``--interval`` reports) is
computed; the table shows how often it covers the truth, its mean width and ends, and
the mean error of the point estimate and of its bootstrap bias correction
(``2 * estimate - mean of replicates``).

    python benchmarks/estimator_coverage.py --ns 1000 --repeats 20 --n-bootstrap 50
    python benchmarks/estimator_coverage.py --ns 10000 --repeats 40 --n-bootstrap 50
    python benchmarks/estimator_coverage.py --losses real --deltas 1e-3 1e-4
    python benchmarks/estimator_coverage.py --ds 3 --ns 10000 --deltas 1e-5 --fixed-tail-size

``--fixed-tail-size`` keeps every replicate at the default tail size (the interval
without the tail-size draws of ``epsstar.statistics.estimators.estimator._tail_scales``), for
comparison.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from functools import cache
from pathlib import Path

import numpy as np

from epsstar import __version__
from epsstar.cli.common.text_table import aligned_table
from epsstar.exceptions import PoorFitWarning
from epsstar.statistics.estimators import estimator
from epsstar.statistics.estimators.estimator import epsilon_star
from epsstar.statistics.estimators.methods import Bootstrap
from epsstar.statistics.names import DEFAULT_METHOD, METHODS
from epsstar.statistics.simulation import true_epsilon

#: One sample: (losses, d or model label, n, delta, repeat, n_bootstrap, level, seed, method).
Job = tuple[str, str, int, float, int, int, float, int, str]


@cache
def real_losses(cache_dir: str, label: str) -> tuple[np.ndarray, np.ndarray]:
    """One model's full training and population losses from the real-losses cache."""
    from estimator_real_losses import cache_name  # benchmarks/ is the script's folder

    with np.load(Path(cache_dir) / cache_name(label, 100_000, 1_000_000, 0)) as stored:
        return stored["train"], stored["population"]


def sample(job: Job, cache_dir: str) -> tuple[np.ndarray, np.ndarray]:
    losses, cell, n, _delta, repeat, _b, _level, seed, _method = job
    if losses == "gamma":
        d = float(cell)
        rng = np.random.default_rng([seed, int(d * 1000), n, repeat])
        return rng.gamma(2.0, 5.0, n), rng.gamma(2.0 + d, 5.0, n)
    train, population = real_losses(cache_dir, cell)
    rng = np.random.default_rng([seed, n, repeat, sum(map(ord, cell))])
    return rng.choice(train, n, replace=False), rng.choice(population, n, replace=False)


def one_repeat(job_and_cache: tuple[Job, str]) -> tuple[float, float, float, float]:
    job, cache_dir = job_and_cache
    _losses, _cell, _n, delta, repeat, n_bootstrap, level, seed, method = job
    train, population = sample(job, cache_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PoorFitWarning)
        found = epsilon_star(
            train,
            population,
            delta=delta,
            method=METHODS.check(method),
            seed=seed + repeat,
            interval=Bootstrap(level, n_bootstrap),
        )
    assert found.interval is not None
    interval = found.interval
    return (found.epsilon, interval.replicate_mean, interval.low, interval.high)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--losses", choices=["gamma", "real"], default="gamma")
    parser.add_argument("--ds", type=float, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument(
        "--models",
        nargs="+",
        default=["logreg 10 ep", "mlp 10 ep", "mlp 30 ep", "mlp dp eps=3 5 ep"],
        help="--losses real: models of estimator_real_losses.py",
    )
    parser.add_argument("--ns", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--deltas", type=float, nargs="+", default=[1e-5, 1e-3])
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--n-bootstrap", type=int, default=50)
    parser.add_argument("--level", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--method", choices=METHODS, default=DEFAULT_METHOD)
    parser.add_argument(
        "--cache",
        default="out/real-losses",
        help="--losses real: the loss cache of estimator_real_losses.py",
    )
    parser.add_argument(
        "--fixed-tail-size",
        action="store_true",
        help="replicates keep the default tail size (no tail-size draws), for comparison",
    )
    args = parser.parse_args()
    if args.fixed_tail_size:
        # The worker processes are forked after this, so they inherit the replacement.
        setattr(estimator, "_tail_scales", lambda _config, n, _seed: np.ones(n))  # noqa: B010
    print(
        f"epsstar {__version__}; losses={args.losses} method={args.method} "
        f"repeats={args.repeats} n_bootstrap={args.n_bootstrap} level={args.level} "
        f"seed={args.seed} fixed_tail_size={args.fixed_tail_size}\n"
    )
    start = time.perf_counter()
    first = "d" if args.losses == "gamma" else "model"
    header = [first, "n", "delta", "true eps*", "err", "err bias-corr.", "cover", "width"]
    header += ["mean low", "mean high"]
    rows = [header]
    cells = [f"{d:g}" for d in args.ds] if args.losses == "gamma" else args.models
    with ProcessPoolExecutor(args.workers) as pool:
        for cell in cells:
            for n in args.ns:
                for delta in args.deltas:
                    if args.losses == "gamma":
                        truth = true_epsilon(float(cell), delta)
                    else:
                        train, population = real_losses(args.cache, cell)
                        truth = epsilon_star(
                            train, population, delta=delta, method="empirical"
                        ).epsilon
                    jobs = [
                        (
                            (
                                args.losses,
                                cell,
                                n,
                                delta,
                                r,
                                args.n_bootstrap,
                                args.level,
                                args.seed,
                                args.method,
                            ),
                            args.cache,
                        )
                        for r in range(args.repeats)
                    ]
                    out = np.array(list(pool.map(one_repeat, jobs)))
                    est, mean, low, high = out.T
                    corrected = np.maximum(2 * est - mean, 0.0)
                    rows.append(
                        [
                            cell,
                            f"{n:,}",
                            f"{delta:g}",
                            f"{truth:.3f}",
                            f"{np.mean(est) - truth:+.3f}",
                            f"{np.mean(corrected) - truth:+.3f}",
                            f"{np.mean((low <= truth) & (truth <= high)):.0%}",
                            f"{np.mean(high - low):.2f}",
                            f"{np.mean(low):.3f}",
                            f"{np.mean(high):.3f}",
                        ]
                    )
                    print("  done", rows[-1], flush=True)
    print("\n" + aligned_table(rows))
    print(f"\nTotal {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
