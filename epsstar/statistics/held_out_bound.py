"""A statistically valid lower bound on ε from a held-out split of the losses."""

from __future__ import annotations

import numpy as np

from epsstar.exceptions import InsufficientDataError
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.bounds import EpsilonLowerBound, epsilon_lower_bound

__all__ = ["split_lower_bound"]


def split_lower_bound(
    train_losses: FloatArray,
    population_losses: FloatArray,
    *,
    delta: float,
    confidence: float = 0.95,
    seed: int = 0,
    candidates_per_tail: int = 64,
) -> EpsilonLowerBound:
    """Clopper-Pearson lower bound with the threshold chosen on a held-out half.

    Each side is shuffled (seeded) and halved. On the selection halves, the
    thresholds at geometrically spaced FPRs and FNRs (1/n to 1/2) are scored by
    the bound itself; the best one is then applied to the evaluation halves,
    whose error counts give the reported bound (Nasr et al., eq. 5). Because the
    evaluation records played no part in choosing the threshold, the bound holds
    at the stated confidence.
    """
    rng = np.random.default_rng([seed, 7])
    train = rng.permutation(train_losses)
    population = rng.permutation(population_losses)
    half_train, half_pop = train.size // 2, population.size // 2
    if min(half_train, half_pop) < 1:
        raise InsufficientDataError(
            "the lower bound needs at least 2 records per data set. "
            f"Found {train.size} training and {population.size} population records."
        )
    select_train, eval_train = np.sort(train[:half_train]), train[half_train:]
    select_pop, eval_pop = np.sort(population[:half_pop]), population[half_pop:]

    def counts(tau: float, members: FloatArray, others: FloatArray) -> tuple[int, int]:
        # Rejection region "loss <= tau": a non-member inside it is a false positive,
        # a member outside it a false negative.
        return int(np.count_nonzero(others <= tau)), int(np.count_nonzero(members > tau))

    levels = np.geomspace(1.0 / max(half_pop, half_train), 0.5, candidates_per_tail)
    thresholds = np.unique(
        np.concatenate(
            [
                np.quantile(select_pop, levels, method="inverted_cdf"),
                np.quantile(select_train, 1.0 - levels, method="inverted_cdf"),
            ]
        )
    )
    best_tau, best = float(thresholds[0]), -1.0
    for tau in thresholds:
        fp, fn = counts(float(tau), select_train, select_pop)
        value = epsilon_lower_bound(
            fp, select_pop.size, fn, select_train.size, delta=delta, confidence=confidence
        ).epsilon
        if value > best:
            best_tau, best = float(tau), value
    fp, fn = counts(best_tau, eval_train, eval_pop)
    return epsilon_lower_bound(
        fp, eval_pop.size, fn, eval_train.size, delta=delta, confidence=confidence
    )
