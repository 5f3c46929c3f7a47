"""Bootstrap confidence intervals for Epsilon*.

Both loss sets are resampled with replacement (independently: they are
independent samples), the estimator is rerun on each of ``n_bootstrap``
resamples, and the interval is read off the replicates. Two constructions:

- ``"percentile"``: the ``(1-level)/2`` and ``(1+level)/2`` quantiles of the
  replicates;
- ``"basic"`` (reverse percentile): ``2*estimate - `` those quantiles, which
  corrects for a shift of the replicates relative to the estimate.

Epsilon* is a supremum over thresholds, so its estimates are biased upward
when two distributions are close (a maximum of noise), and neither
construction is exact; the coverage each achieves is measured by
``benchmarks/estimator_coverage.py`` and reported in ``docs/accuracy.md``.
Bounds below 0 are raised to 0 (Epsilon* ≥ 0).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np

from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import FloatArray, check_in_range, check_positive_int
from epsstar.statistics.results import BootstrapInterval

__all__ = ["INTERVAL_KINDS", "bootstrap_interval"]

INTERVAL_KINDS = ("percentile", "basic")
Kind = Literal["percentile", "basic"]


def bootstrap_replicates(
    train: FloatArray,
    population: FloatArray,
    estimate: Callable[[FloatArray, FloatArray], float],
    *,
    n_bootstrap: int,
    seed: int = 0,
) -> FloatArray:
    """The estimator on ``n_bootstrap`` independent resamples of each loss set."""
    n_bootstrap = check_positive_int("n_bootstrap", n_bootstrap, minimum=2)
    rng = np.random.default_rng([seed, 0xB007])
    values = np.empty(n_bootstrap)
    for b in range(n_bootstrap):
        a = train[rng.integers(0, train.size, train.size)]
        c = population[rng.integers(0, population.size, population.size)]
        values[b] = estimate(a, c)
    return values


def interval_from_replicates(
    estimate: float, replicates: FloatArray, *, level: float, kind: Kind = "percentile"
) -> BootstrapInterval:
    """Percentile or basic interval at ``level`` from bootstrap replicates."""
    level = check_in_range("level", level, 0.0, 1.0)
    if kind not in INTERVAL_KINDS:
        raise InvalidInputError(f"kind must be one of {', '.join(INTERVAL_KINDS)}. Found {kind!r}.")
    q_low, q_high = np.quantile(replicates, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    if kind == "basic":
        q_low, q_high = 2.0 * estimate - q_high, 2.0 * estimate - q_low
    return BootstrapInterval(
        low=max(float(q_low), 0.0),
        high=max(float(q_high), 0.0),
        level=level,
        kind=kind,
        n_bootstrap=int(replicates.size),
        replicate_mean=float(np.mean(replicates)),
        replicate_sd=float(np.std(replicates, ddof=1)),
    )


def bootstrap_interval(
    train: FloatArray,
    population: FloatArray,
    estimate: Callable[[FloatArray, FloatArray], float],
    point: float,
    *,
    level: float = 0.95,
    n_bootstrap: int = 200,
    seed: int = 0,
    kind: Kind = "percentile",
) -> BootstrapInterval:
    """A bootstrap interval for ``estimate(train, population)`` whose value is ``point``."""
    replicates = bootstrap_replicates(
        train, population, estimate, n_bootstrap=n_bootstrap, seed=seed
    )
    return interval_from_replicates(point, replicates, level=level, kind=kind)
