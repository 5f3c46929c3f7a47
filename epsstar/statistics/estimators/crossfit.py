"""Cross-fitted Epsilon*: the test is chosen on one half of the data, scored on the other.

A plug-in estimate ``sup_c g(c; F̂)`` of eq. 7 (Negoescu et al. 2024, "Epsilon*: Privacy Metric for
Machine Learning Models") is biased upward: the supremum picks the threshold where the fitted CDFs'
noise happens to raise the ratio most. When nothing leaks every ratio is at most 1, so the whole
estimate is that noise (the selection bias of a maximum). Cross-fitting removes the selection: with
the training and the population losses each split at random into halves ``A`` and ``B``,

1. fit both sides on ``A`` and, for each ratio ``j`` of eq. 7, locate its
   maximising test, at rates ``(t_A, η_A)``;
2. on ``B``, take the test with the same rate in ratio ``j``'s denominator
   (FPR ``t_A`` for ``(1-δ-η)/t`` and ``(η-δ)/(1-t)``, FNR ``η_A`` for the
   other two), kept inside ``B``'s admissible thresholds;
3. score it with ``B``'s fits: ``s_j = max(0, log ratio_j)``.

``B``'s fits are independent of the choice made on ``A``, so ``s_j`` is a
noisy but unselected value of ratio ``j`` at the chosen test; with no leak it
is centred near 0 instead of at the maximum of the noise. With a leak, the
chosen test is near the true maximiser of ratio ``j``. The halves swap roles,
``s_j`` is averaged over both and over ``n_splits`` independent random
halvings, and the estimate is the largest of the four averages: the only
selection left is among four averaged scores, not over a continuum of
thresholds. (Selecting the ratio on ``A`` too would lose the leak whenever
``A``'s noise favours a ratio that is truly smaller.) Each fit sees n/2
records, so its tails reach less far than a full-sample fit's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from epsstar.statistics._validation import check_positive_int
from epsstar.statistics.estimators.optimizer import (
    admissible_span,
    evaluate_terms,
    zoom_maximum,
)
from epsstar.statistics.estimators.ratio_terms import Supremum
from epsstar.statistics.fitting.base import ContinuousDistribution
from epsstar.statistics.summaries.loss_summary import LossesLike, as_losses
from epsstar.statistics.summaries.protocols import Sample

__all__ = [
    "CrossFit",
    "crossfit_epsilon",
    "crossfit_fits",
    "crossfit_score",
    "ratio_maximisers",
    "score_on",
]

#: What :func:`crossfit_fits` makes of one half of both sides.
Fitted = TypeVar("Fitted")
#: Fits both sides (training, population losses) to loss-ordered distributions.
PairFitter = Callable[[Sample, Sample], tuple[ContinuousDistribution, ContinuousDistribution]]

#: Ratios of eq. 7 (1-based, as in ``Supremum.term``) whose denominator is a
#: function of the FPR ``t``: ``(1-δ-η)/t`` and ``(η-δ)/(1-t)``.
FPR_DENOMINATOR_TERMS = frozenset({1, 3})


#: Locating one ratio's maximiser: quantile grid per tail and zoom rounds.
GRID_PER_TAIL = 64
ZOOM_POINTS = 21
ZOOM_ROUNDS = 6


@dataclass(frozen=True, slots=True)
class CrossFit:
    """The cross-fitted Epsilon*, its ratio (1..4, or 0 for Epsilon* = 0), and the
    mean score of each of the four ratios of eq. 7."""

    epsilon: float
    term: int
    ratio_scores: tuple[float, float, float, float]

    @classmethod
    def of_scores(cls, scores: list[list[float]]) -> CrossFit:
        """The cross-fitted Epsilon* of the four ratios' scores, one row per (halving,
        direction): the largest of the four means (module doc)."""
        means = np.mean(scores, axis=0)
        term = int(np.argmax(means))
        epsilon = float(means[term])
        return cls(
            epsilon=epsilon,
            term=term + 1 if epsilon > 0 else 0,
            ratio_scores=(float(means[0]), float(means[1]), float(means[2]), float(means[3])),
        )


def ratio_maximisers(
    train: ContinuousDistribution, population: ContinuousDistribution, delta: float
) -> list[Supremum]:
    """Each ratio of eq. 7 at its own maximising admissible threshold (``term`` 1..4).

    A grid of both distributions' quantiles (geometric towards δ in each tail)
    brackets each ratio's best point, which a few rounds of zooming refine.
    A ratio that is nowhere finite gets ``epsilon = -inf``.
    """
    lo, hi, near_edges = admissible_span(train, population, delta)
    nan = float("nan")
    if not lo < hi:
        return [Supremum(-np.inf, nan, nan, nan, j) for j in range(1, 5)]
    tail = np.geomspace(delta, 0.5, GRID_PER_TAIL)
    grid = np.concatenate(
        [population.ppf(tail), population.isf(tail), train.ppf(tail), train.isf(tail)]
    )
    grid = np.concatenate([grid, near_edges])
    grid = np.unique(np.clip(np.append(grid[np.isfinite(grid)], [lo, hi]), lo, hi))
    inset = 1e-9 * (hi - lo)
    grid = np.clip(grid, lo + inset, hi - inset)
    terms = evaluate_terms(train, population, grid, delta)
    found = []
    for row in range(4):
        column = int(np.argmax(terms[row]))
        best, threshold = float(terms[row, column]), float(grid[column])
        left, right = grid[max(column - 1, 0)], grid[min(column + 1, grid.size - 1)]
        value, zoomed = zoom_maximum(
            train,
            population,
            delta,
            row,
            float(left),
            float(right),
            n_points=ZOOM_POINTS,
            rounds=ZOOM_ROUNDS,
        )
        if value > best:
            best, threshold = value, zoomed
        point = np.array([threshold])
        fpr = float(np.exp(population.logcdf(point))[0])
        fnr = float(np.exp(train.logsf(point))[0])
        found.append(Supremum(best, threshold, fpr, fnr, row + 1))
    return found


def score_on(
    chosen: Supremum,
    train: ContinuousDistribution,
    population: ContinuousDistribution,
    delta: float,
) -> float:
    """``max(0, log ratio)`` of ``chosen``'s ratio of eq. 7 under other fits.

    The test is the one whose denominator rate (FPR for ratios 1 and 3, FNR
    for 2 and 4) equals ``chosen``'s; that rate is the admissible one, so it is
    kept a hair inside ``(δ, 1-δ)``.
    """
    if chosen.term == 0 or not np.isfinite(chosen.epsilon):
        return 0.0
    inside = 1e-9 * delta
    if chosen.term in FPR_DENOMINATOR_TERMS:
        rate = min(max(chosen.fpr, delta + inside), 1.0 - delta - inside)
        threshold = float(population.ppf(np.array([rate]))[0])
    else:
        rate = min(max(chosen.fnr, delta + inside), 1.0 - delta - inside)
        threshold = float(train.isf(np.array([rate]))[0])
    if not np.isfinite(threshold):
        return 0.0
    value = evaluate_terms(train, population, np.array([threshold]), delta)[chosen.term - 1, 0]
    return float(value) if value > 0 else 0.0


#: The fits of one random halving: ((train A, population A), (train B, population B)).
HalfFits = tuple[
    tuple[ContinuousDistribution, ContinuousDistribution],
    tuple[ContinuousDistribution, ContinuousDistribution],
]


def crossfit_fits(
    train: LossesLike,
    population: LossesLike,
    fit: Callable[[Sample, Sample], Fitted],
    *,
    n_splits: int = 1,
    seed: int = 0,
) -> list[tuple[Fitted, Fitted]]:
    """``fit`` applied to both halves of ``n_splits`` seeded random halvings (module doc):
    a :data:`PairFitter` gives :data:`HalfFits`, the atoms estimator its counts.

    Losses held in memory are shuffled (seeded) and halved; a
    :class:`~epsstar.statistics.summaries.loss_summary.LossSummary` brings the sketches of its
    halves (:meth:`~epsstar.statistics.summaries.protocols.Losses.crossfit_halves`). The fits
    do not depend on δ, so one set serves Epsilon* at every δ.
    """
    n_splits = check_positive_int("n_splits", n_splits)
    sides = as_losses(train, "train"), as_losses(population, "population")
    rng = np.random.default_rng([seed, 0xC0F1])
    found: list[tuple[Fitted, Fitted]] = []
    for index in range(n_splits):
        a = sides[0].crossfit_halves(index, rng)
        b = sides[1].crossfit_halves(index, rng)
        found.append((fit(a[0], b[0]), fit(a[1], b[1])))
    return found


def crossfit_score(halvings: Sequence[HalfFits], delta: float) -> CrossFit:
    """Cross-fitted Epsilon* at ``delta`` from the fits of :func:`crossfit_fits`."""
    scores: list[list[float]] = []
    for fits in halvings:
        for chooser, scorer in ((0, 1), (1, 0)):
            chosen = ratio_maximisers(*fits[chooser], delta)
            scores.append([score_on(c, *fits[scorer], delta) for c in chosen])
    return CrossFit.of_scores(scores)


def crossfit_epsilon(
    train: LossesLike,
    population: LossesLike,
    delta: float,
    fit: PairFitter,
    *,
    n_splits: int = 1,
    seed: int = 0,
) -> CrossFit:
    """Cross-fitted Epsilon* (module doc) with ``fit`` applied to each half."""
    return crossfit_score(
        crossfit_fits(train, population, fit, n_splits=n_splits, seed=seed), delta
    )
