"""A held-out exact test of "the model does not tell members from non-members".

Under the null hypothesis the training and the population losses come from one
distribution, so every record is exchangeable with every other. Each side is
halved (:func:`epsstar.statistics.bounds.held_out_bound.held_out_halves`). On the
selection halves, every candidate loss-threshold test (both tails, both
directions) is scored by the two-proportion z statistic of TPR − FPR, and the
most significant one is kept. On the evaluation halves that fixed test makes
``TP`` true positives among ``positives`` members and ``FP`` false positives
among ``negatives`` non-members; the one-sided Fisher exact test of the 2×2
table ``[[TP, positives − TP], [FP, negatives − FP]]`` (alternative: TPR > FPR)
gives the p-value. The test was chosen without the evaluation records, and
Fisher's test is exact given the margins, so under the null the p-value falls
below any level ``a`` with probability at most ``a``, whatever the shape of the
losses (ties included).

The z statistic chooses the test with the strongest evidence, which is usually
in the body for a shifted distribution and in a tail when a few records are
memorised; the Clopper–Pearson bound chooses the test with the largest provable
ratio instead, which at small counts is often no test at all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from epsstar.plumbing.records.json_records import JsonRecord
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.bounds.held_out_bound import (
    DIRECTIONS,
    Direction,
    candidate_thresholds,
    error_counts,
    evaluated,
    held_out_halves,
)
from epsstar.statistics.summaries.loss_summary import LossesLike
from epsstar.statistics.summaries.protocols import Sample

__all__ = ["LeakTest", "held_out_leak_test"]


@dataclass(frozen=True, slots=True)
class LeakTest(JsonRecord):
    """The held-out test (threshold, direction), its evaluation counts and p-value."""

    p_value: float
    threshold: float
    direction: Direction
    true_positives: int
    positives: int
    false_positives: int
    negatives: int


def _z_scores(
    thresholds: FloatArray, direction: Direction, members: Sample, others: Sample
) -> FloatArray:
    """Two-proportion z statistic of TPR − FPR of each test (0 where undefined)."""
    fp, fn = error_counts(thresholds, direction, members, others)
    n_members, n_others = members.n, others.n
    tpr = (n_members - fn) / n_members
    fpr = fp / n_others
    pooled = (n_members - fn + fp) / (n_members + n_others)
    spread = np.sqrt(pooled * (1.0 - pooled) * (1.0 / n_members + 1.0 / n_others))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (tpr - fpr) / spread
    return np.where(spread > 0, z, 0.0)


def held_out_leak_test(
    train_losses: LossesLike,
    population_losses: LossesLike,
    *,
    seed: int = 0,
    candidates_per_tail: int = 64,
) -> LeakTest:
    """The test of the module doc on ``train_losses`` (members) and ``population_losses``."""
    (select_train, select_pop), (eval_train, eval_pop) = held_out_halves(
        train_losses, population_losses, seed=seed
    )
    thresholds = candidate_thresholds(select_train, select_pop, candidates_per_tail)
    scores = np.vstack([_z_scores(thresholds, d, select_train, select_pop) for d in DIRECTIONS])
    which, column = np.unravel_index(int(np.argmax(scores)), scores.shape)
    direction = DIRECTIONS[int(which)]
    threshold = evaluated(float(thresholds[column]), eval_train, eval_pop)
    positives, negatives = eval_train.n, eval_pop.n
    fp, fn = error_counts(np.array([threshold]), direction, eval_train, eval_pop)
    false_positives, true_positives = int(fp[0]), positives - int(fn[0])
    table = np.array(
        [
            [true_positives, positives - true_positives],
            [false_positives, negatives - false_positives],
        ]
    )
    p_value = float(stats.fisher_exact(table, alternative="greater").pvalue)
    return LeakTest(
        p_value=min(max(p_value, 0.0), 1.0),
        threshold=threshold,
        direction=direction,
        true_positives=true_positives,
        positives=positives,
        false_positives=false_positives,
        negatives=negatives,
    )
