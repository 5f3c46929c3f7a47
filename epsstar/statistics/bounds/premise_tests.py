"""Tests of the audit's premise: do the training and population records come from one
distribution? Each gives a p-value under that null; :func:`premise_verdict` combines the
four by Bonferroni (each at ``alpha / 4``), so the chance that any flags two tables drawn
from one distribution is at most ``alpha``, whatever the dependence between them.

- **The blind lower bound** (:func:`epsstar.statistics.bounds.held_out_bound.split_lower_bound`
  on the blind classifier's scores) is above 0 at confidence ``1 - alpha / 4``. It reads the
  difference in Epsilon*'s own units, but it rests on one threshold's tail: a shift that
  moves every record a little (a class mix changed by 10 points: ε ≈ 0.14) leaves it at 0
  at the sizes the benchmark uses (docs/premise.md).
- **The blind ranks** (:func:`fold_rank_p_value`): the one-sided Mann–Whitney test that the
  members' cross-fitted log-odds rank above the population's, within each fold (the
  scores of one fold come from one classifier, which saw none of that fold's rows, so
  under the null the fold's scores are exchangeable between the sides). The folds' z
  scores are averaged, not added by Stouffer's rule: they are not independent (fold 0's
  classifier learnt the chance pattern of fold 0 and is tested on fold 1, and the other
  way round, so both read one coincidence; Stouffer's sum flagged 2 of 20 unshifted pairs
  at level 0.017 in ``benchmarks/premise.py``). A mean of standard normal scores has a
  variance of at most 1 whatever their correlation, so the mean read as a standard normal
  keeps the level (asymptotically; conservative when the folds disagree). It reads the
  whole ordering, so the small advantage of many records (duplicated training rows whose
  twin fell in the other fold) is seen.
- **The label frequencies** (:func:`label_p_value`): Fisher's exact test of the two
  tables' class counts, two-sided (scipy; for more than two classes, its Monte Carlo
  p-value over 1,999 tables with the observed margins, which stays valid because it
  counts the observed table among them). A class mix is one number per class; a test of
  those numbers sees a 10-point change far sooner than any classifier of the records.
- **The exact repeats** (:func:`epsstar.statistics.bounds.repeats_test.repeats_p_value`): a
  permutation test that both tables repeat their own rows at one rate. A de-duplicated
  population is one number away from its training table, the share of repeated rows,
  which the classifier sees only through the rows whose twin fell in the other fold.

A large table makes any difference significant: the verdict says the tables differ, and
the blind Epsilon* and AUC say by how much.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from epsstar.plumbing.records.json_records import JsonRecord, json_rule
from epsstar.statistics._validation import FloatArray

__all__ = [
    "MONTE_CARLO_TABLES",
    "TESTS",
    "PremiseTest",
    "fold_rank_p_value",
    "label_p_value",
    "premise_verdict",
]

#: Tests of the premise; each is given ``alpha / TESTS``.
TESTS: Final = 4
#: Tables drawn for the Monte Carlo p-value of Fisher's test with more than two classes:
#: its smallest p-value, 1 / 2,000, is 25 times below the level 0.05 / 4, at about a
#: quarter of the time of 9,999 tables.
MONTE_CARLO_TABLES: Final = 1_999


@dataclass(frozen=True, slots=True)
class PremiseTest(JsonRecord):
    """One test of the premise: its name, its p-value (``None`` for the lower bound, read
    at its confidence instead), the share of ``alpha`` it was given, and whether it flags
    the tables as different."""

    name: str = field(metadata=json_rule(name="test"))
    p_value: float | None
    level: float
    flagged: bool


def fold_rank_p_value(
    members: FloatArray,
    others: FloatArray,
    member_folds: NDArray[np.int64],
    other_folds: NDArray[np.int64],
) -> float:
    """One-sided p-value that the members' scores rank above the others' (scores oriented
    as log-odds of membership), fold by fold, the folds' z scores averaged (see the module
    docstring)."""
    from scipy.stats import mannwhitneyu, norm

    z = []
    for fold in np.union1d(member_folds, other_folds):
        a, b = members[member_folds == fold], others[other_folds == fold]
        if a.size == 0 or b.size == 0:
            continue
        if np.ptp(np.concatenate([a, b])) == 0:  # one score: no ordering to read
            z.append(0.0)
            continue
        p = mannwhitneyu(a, b, alternative="greater", method="asymptotic", use_continuity=False)
        z.append(float(norm.isf(p.pvalue)))
    if not z:
        return 1.0
    return float(norm.sf(np.mean(z)))


def label_p_value(train: ArrayLike, population: ArrayLike, *, seed: int) -> float:
    """Two-sided p-value of Fisher's exact test that both tables have one class mix (see
    the module docstring); 1 with fewer than two classes."""
    from scipy.stats import MonteCarloMethod, fisher_exact

    sides = [np.asarray(side, object).ravel() for side in (train, population)]
    # Labels compared as text, as the audit reads them from a file.
    _, codes = np.unique(np.concatenate(sides).astype(str), return_inverse=True)
    width = int(codes.max()) + 1 if codes.size else 0
    cut = sides[0].size
    counts = np.stack(
        [np.bincount(codes[:cut], minlength=width), np.bincount(codes[cut:], minlength=width)]
    )
    if counts.shape[1] < 2:
        return 1.0
    if counts.shape[1] == 2:
        return float(fisher_exact(counts).pvalue)
    method = MonteCarloMethod(n_resamples=MONTE_CARLO_TABLES, rng=np.random.default_rng(seed))
    return float(fisher_exact(counts, method=method).pvalue)


def premise_verdict(
    bound_flags: bool, *, ranks: float, labels: float, repeats: float, alpha: float
) -> tuple[PremiseTest, ...]:
    """The tests of the premise, each at ``alpha / TESTS`` (Bonferroni): the blind lower
    bound (``bound_flags``: above 0 at confidence ``1 - alpha / TESTS``), the blind ranks'
    p-value ``ranks``, the label frequencies' p-value ``labels`` and the exact repeats'
    p-value ``repeats``."""
    level = alpha / TESTS
    return (
        PremiseTest("blind lower bound", None, level, bound_flags),
        PremiseTest("blind ranks", ranks, level, ranks < level),
        PremiseTest("label frequencies", labels, level, labels < level),
        PremiseTest("exact repeats", repeats, level, repeats < level),
    )
