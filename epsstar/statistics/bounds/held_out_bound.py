"""A statistically valid lower bound on ε from a held-out split of the losses."""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from epsstar.exceptions import InsufficientDataError, InvalidInputError
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.bounds.from_counts import (
    EpsilonLowerBound,
    clopper_pearson_uppers,
    epsilon_lower_bound,
)
from epsstar.statistics.summaries.loss_sketch import SampleLike, as_sample
from epsstar.statistics.summaries.loss_summary import LossesLike, as_losses
from epsstar.statistics.summaries.protocols import Losses, Sample

__all__ = [
    "DIRECTIONS",
    "Direction",
    "Losses",
    "at_or_below",
    "candidate_thresholds",
    "countable",
    "error_counts",
    "evaluated",
    "held_out_halves",
    "sorted_half",
    "split_lower_bound",
]

Direction = Literal["members_lower", "members_higher"]
#: The two loss-threshold tests: members are called below the threshold, or above it.
DIRECTIONS: tuple[Direction, Direction] = ("members_lower", "members_higher")


def _bound_at(
    thresholds: FloatArray,
    direction: Direction,
    members: SampleLike,
    others: SampleLike,
    delta: float,
    confidence: float,
) -> FloatArray:
    """:func:`epsilon_lower_bound` of the test ``direction`` at each threshold, vectorised.

    The error rates' upper bounds are those of :func:`epsilon_lower_bound`
    (:func:`~epsstar.statistics.bounds.from_counts.clopper_pearson_uppers`).
    """
    members, others = as_sample(members), as_sample(others)
    fp, fn = error_counts(thresholds, direction, members, others)
    fp_up = clopper_pearson_uppers(fp, others.n, confidence)
    fn_up = clopper_pearson_uppers(fn, members.n, confidence)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.maximum((1.0 - delta - fp_up) / fn_up, (1.0 - delta - fn_up) / fp_up)
        return np.where(ratios > 1.0, np.log(ratios), 0.0)


def held_out_halves(
    train_losses: LossesLike, population_losses: LossesLike, *, seed: int
) -> tuple[tuple[Sample, Sample], tuple[Sample, Sample]]:
    """((selection train, selection population), (evaluation train, evaluation population)).

    Each side held in memory is shuffled (seeded) and halved; a
    :class:`~epsstar.statistics.summaries.loss_summary.LossSummary` brings the sketches of its
    held-out halves (:meth:`~epsstar.statistics.summaries.protocols.Losses.held_out_halves`).
    """
    rng = np.random.default_rng([seed, 7])
    train = as_losses(train_losses, "train_losses", min_size=0).held_out_halves(rng)
    population = as_losses(population_losses, "population_losses", min_size=0).held_out_halves(rng)
    if min(half.n for half in (*train, *population)) < 1:
        raise InsufficientDataError(
            "the held-out tests need at least 2 records per data set. Found "
            f"{train[0].n + train[1].n} training and "
            f"{population[0].n + population[1].n} population records."
        )
    return (train[0], population[0]), (train[1], population[1])


def countable(thresholds: FloatArray, *halves: SampleLike) -> FloatArray:
    """Thresholds at which every half counts exactly, chosen from the halves of selection:
    each threshold is kept where it lies well inside the kept tails of every sketch among
    ``halves`` (at most half their ``k`` values beyond it), else moved down to the grid edge
    at or below it (where every sketch counts exactly).

    The rule reads the selection halves only, so the test stays fixed before the
    evaluation halves are seen; a kept threshold lies within the evaluation sketches'
    tails too, unless a half's count beyond it more than doubles by chance (probability
    about ``exp(-k/6)``; :func:`evaluated` then takes the grid edge).
    """
    samples = [as_sample(half) for half in halves]
    keep = np.ones(thresholds.size, dtype=bool)
    for sample in samples:
        keep &= sample.countable(thresholds)
    if keep.all():
        return thresholds
    return np.where(keep, thresholds, _floor(thresholds, samples))


def _floor(thresholds: FloatArray, samples: list[Sample]) -> FloatArray:
    """The largest point at or below each threshold where every sample counts exactly."""
    return np.asarray(np.minimum.reduce([s.floor_edges(thresholds) for s in samples]))


def evaluated(threshold: float, *halves: SampleLike) -> float:
    """``threshold`` if every evaluation half counts exactly there, else the grid edge at or
    below it (see :func:`countable`)."""
    samples = [as_sample(half) for half in halves]
    at = np.array([threshold])
    if all(bool(s.count_below(at)[1][0]) for s in samples):
        return threshold
    return float(_floor(at, samples)[0])


def candidate_thresholds(members: SampleLike, others: SampleLike, per_tail: int = 64) -> FloatArray:
    """Both sides' quantiles at geometrically spaced rates 1/n … 1/2, in both tails (where
    a side is a sketch, at thresholds every half counts exactly: :func:`countable`)."""
    members, others = as_sample(members), as_sample(others)
    levels = np.geomspace(1.0 / max(members.n, others.n), 0.5, per_tail)
    both_tails = np.concatenate([levels, 1.0 - levels])
    found = np.concatenate([others.quantiles(both_tails), members.quantiles(both_tails)])
    return np.unique(countable(found, members, others))


def at_or_below(side: SampleLike, thresholds: FloatArray) -> NDArray[np.int64]:
    """``#{l ≤ τ}`` of a sample at each threshold (a sketch's must be exact there: a grid
    edge, or in its tails)."""
    counts, exact = as_sample(side).count_below(thresholds)
    if not exact.all():
        raise InvalidInputError("a sketch counts exactly at its grid's edges and in its tails.")
    return counts.astype(np.int64)


def error_counts(
    thresholds: FloatArray,
    direction: Direction,
    members: SampleLike,
    others: SampleLike,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(false positives, false negatives) of the test ``direction`` at each threshold.

    ``members_lower`` calls a record a member when its loss is ≤ the threshold: a
    non-member at or below it is a false positive, a member above it a false negative;
    ``members_higher`` is the mirrored test.
    """
    members, others = as_sample(members), as_sample(others)
    others_at_or_below = at_or_below(others, thresholds)
    members_at_or_below = at_or_below(members, thresholds)
    if direction == "members_lower":
        return others_at_or_below, members.n - members_at_or_below
    return others.n - others_at_or_below, members_at_or_below


def sorted_half(half: SampleLike) -> Sample:
    """An evaluation half ready for :func:`error_counts` (a sample counts from its values
    sorted once, so nothing is left to do but take it as a sample)."""
    return as_sample(half)


def split_lower_bound(
    train_losses: LossesLike,
    population_losses: LossesLike,
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
    ``(t-δ)/(1-η)`` of eq. 7 in Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning
    Models") — and each is scored by the bound itself. The best (threshold, direction) is then
    applied to the evaluation halves, whose error counts give the reported bound (Nasr et al.,
    eq. 5). The evaluation records played no part in choosing the test, so the bound holds at the
    stated confidence, whichever direction leaks.
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
    best_direction = DIRECTIONS[int(which)]
    best_tau = evaluated(float(thresholds[column]), eval_train, eval_pop)
    fp_counts, fn_counts = error_counts(np.array([best_tau]), best_direction, eval_train, eval_pop)
    fp, fn = int(fp_counts[0]), int(fn_counts[0])
    n_pop, n_train = eval_pop.n, eval_train.n
    bound = epsilon_lower_bound(fp, n_pop, fn, n_train, delta=delta, confidence=confidence)
    return dataclasses.replace(bound, threshold=best_tau, direction=best_direction)
