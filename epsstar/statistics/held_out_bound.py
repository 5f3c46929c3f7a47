"""A statistically valid lower bound on ε from a held-out split of the losses."""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from epsstar.exceptions import InsufficientDataError
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.bounds import (
    EpsilonLowerBound,
    clopper_pearson_uppers,
    epsilon_lower_bound,
)

__all__ = [
    "DIRECTIONS",
    "Direction",
    "candidate_thresholds",
    "error_counts",
    "held_out_halves",
    "split_lower_bound",
]

Direction = Literal["members_lower", "members_higher"]
#: The two loss-threshold tests: members are called below the threshold, or above it.
DIRECTIONS: tuple[Direction, Direction] = ("members_lower", "members_higher")


def _bound_at(
    thresholds: FloatArray,
    direction: Direction,
    members: FloatArray,
    others: FloatArray,
    delta: float,
    confidence: float,
) -> FloatArray:
    """:func:`epsilon_lower_bound` of the test ``direction`` at each threshold, vectorised.

    ``members`` and ``others`` are sorted; the error rates' upper bounds are those of
    :func:`epsilon_lower_bound` (:func:`~epsstar.statistics.bounds.clopper_pearson_uppers`).
    """
    fp, fn = error_counts(thresholds, direction, members, others)
    fp_up = clopper_pearson_uppers(fp, others.size, confidence)
    fn_up = clopper_pearson_uppers(fn, members.size, confidence)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.maximum((1.0 - delta - fp_up) / fn_up, (1.0 - delta - fn_up) / fp_up)
        return np.where(ratios > 1.0, np.log(ratios), 0.0)


def held_out_halves(
    train_losses: FloatArray, population_losses: FloatArray, *, seed: int
) -> tuple[tuple[FloatArray, FloatArray], tuple[FloatArray, FloatArray]]:
    """((selection train, selection population), (evaluation train, evaluation population)).

    Each side is shuffled (seeded) and halved; the selection halves come sorted.
    """
    rng = np.random.default_rng([seed, 7])
    train = rng.permutation(train_losses)
    population = rng.permutation(population_losses)
    half_train, half_pop = train.size // 2, population.size // 2
    if min(half_train, half_pop) < 1:
        raise InsufficientDataError(
            "the held-out tests need at least 2 records per data set. "
            f"Found {train.size} training and {population.size} population records."
        )
    return (
        (np.sort(train[:half_train]), np.sort(population[:half_pop])),
        (train[half_train:], population[half_pop:]),
    )


def candidate_thresholds(members: FloatArray, others: FloatArray, per_tail: int = 64) -> FloatArray:
    """Both sides' quantiles at geometrically spaced rates 1/n … 1/2, in both tails."""
    levels = np.geomspace(1.0 / max(members.size, others.size), 0.5, per_tail)
    both_tails = np.concatenate([levels, 1.0 - levels])
    return np.unique(
        np.concatenate(
            [
                np.quantile(others, both_tails, method="inverted_cdf"),
                np.quantile(members, both_tails, method="inverted_cdf"),
            ]
        )
    )


def error_counts(
    thresholds: FloatArray, direction: Direction, members: FloatArray, others: FloatArray
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(false positives, false negatives) of the test ``direction`` at each threshold.

    ``members`` and ``others`` are sorted. ``members_lower`` calls a record a member
    when its loss is ≤ the threshold: a non-member at or below it is a false positive,
    a member above it a false negative; ``members_higher`` is the mirrored test.
    """
    others_at_or_below = np.searchsorted(others, thresholds, side="right")
    members_at_or_below = np.searchsorted(members, thresholds, side="right")
    if direction == "members_lower":
        return others_at_or_below, members.size - members_at_or_below
    return others.size - others_at_or_below, members_at_or_below


def split_lower_bound(
    train_losses: FloatArray,
    population_losses: FloatArray,
    *,
    delta: float,
    confidence: float = 0.95,
    seed: int = 0,
    candidates_per_tail: int = 64,
) -> EpsilonLowerBound:
    """Clopper-Pearson lower bound with the test chosen on a held-out half.

    Each side is shuffled (seeded) and halved. On the selection halves, loss
    thresholds at geometrically spaced rates (1/n to 1/2, in both tails of both
    sides) are tried in both directions — members called below the threshold, as
    in the paper's attack, and above it (the mirrored ratios ``(η-δ)/(1-t)`` and
    ``(t-δ)/(1-η)`` of eq. 7 in ``epsilon-star-negoescu-2024.md``) — and each is
    scored by the bound itself. The best (threshold, direction) is then applied
    to the evaluation halves, whose error counts give the reported bound (Nasr
    et al., eq. 5). The evaluation records played no part in choosing the test,
    so the bound holds at the stated confidence, whichever direction leaks.
    """
    (select_train, select_pop), (eval_train, eval_pop) = held_out_halves(
        train_losses, population_losses, seed=seed
    )
    thresholds = candidate_thresholds(select_train, select_pop, candidates_per_tail)
    scores = [
        _bound_at(thresholds, direction, select_train, select_pop, delta, confidence)
        for direction in DIRECTIONS
    ]
    which, column = np.unravel_index(int(np.argmax(np.vstack(scores))), (2, thresholds.size))
    best_tau, best_direction = float(thresholds[column]), DIRECTIONS[int(which)]
    fp_counts, fn_counts = error_counts(
        np.array([best_tau]), best_direction, np.sort(eval_train), np.sort(eval_pop)
    )
    fp, fn = int(fp_counts[0]), int(fn_counts[0])
    bound = epsilon_lower_bound(
        fp, eval_pop.size, fn, eval_train.size, delta=delta, confidence=confidence
    )
    return dataclasses.replace(bound, threshold=best_tau, direction=best_direction)
