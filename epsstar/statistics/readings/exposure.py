"""The most exposed records: the members whose score is the strongest evidence of membership.

A member's evidence is the likelihood ratio of its score: the members' density over the
non-members' density at that score. Scores are oriented like losses (lower, more likely a
member), and the audit's threshold test assumes that the ratio falls as the score rises. Under
that assumption the maximum-likelihood estimate of the ratio is the slope of the ROC convex
hull at the score, which isotonic regression of membership on the score finds: it pools the
pooled scores, in order, into blocks (pool adjacent violators), and a block's ratio is the
members' share of all members in it over the non-members' share of all non-members
(Fawcett & Niculescu-Mizil 2007, "PAV and the ROC convex hull", Machine Learning 68). The
ratio needs no fitted family, so it reads the same under every estimator; the largest one is
the steepest start of the ROC curve, which is what Epsilon* bounds
(Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models").

A block with no non-members would have an infinite ratio, so each block gets one pseudo-record,
split between the sides in proportion to their sizes: the shares become ``k_m / m + 1 / N``
and ``k_n / n + 1 / N`` (``N = m + n``). That draws every ratio towards 1 without moving it
across 1, so the first block, whose member share is the highest, never reads below 0 on the
log scale. (A single pseudo-record added to the non-members alone, as this module once did,
made the lowest member read ``log((n + 1) / m) < 0`` whenever ``m > n + 1``.)
scikit-learn's ``IsotonicRegression`` does the pooling; this module only counts the blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from sklearn.isotonic import IsotonicRegression

from epsstar.statistics._validation import FloatArray, finite_vector

__all__ = ["ExposedRecord", "log_likelihood_ratios", "most_exposed"]


@dataclass(frozen=True, slots=True)
class ExposedRecord:
    """One member: its index among the members, its score, and the log-likelihood ratio of
    its score, members' density over non-members' (see the module docstring)."""

    index: int
    score: float
    log_likelihood_ratio: float


def log_likelihood_ratios(members: FloatArray, nonmembers: FloatArray) -> FloatArray:
    """The log-likelihood ratio of every member's score, in the members' order: the isotonic
    (ROC convex hull) estimate with one proportional pseudo-record per block."""
    m, n = members.size, nonmembers.size
    scores = np.concatenate([members, nonmembers])
    is_member = np.concatenate([np.ones(m), np.zeros(n)])
    pooled = IsotonicRegression(increasing=False).fit_transform(scores, is_member)
    order = np.argsort(scores, kind="stable")
    # A block: a run of equal pooled values among the sorted scores.
    block_of = np.empty(scores.size, dtype=np.intp)
    block_of[order] = np.cumsum(np.r_[True, np.diff(pooled[order]) != 0]) - 1
    in_block_members = np.bincount(block_of, weights=is_member)
    in_block = np.bincount(block_of)
    total = m + n
    member_share = in_block_members / m + 1 / total
    other_share = (in_block - in_block_members) / n + 1 / total
    ratio: FloatArray = np.log(member_share) - np.log(other_share)
    return ratio[block_of[:m]]


def most_exposed(
    members: object, nonmembers: object, k: int
) -> tuple[tuple[ExposedRecord, ...], Literal["isotonic"]]:
    """The ``k`` members with the lowest scores, lowest first (ties by index), and where
    their likelihood ratios come from."""
    m = finite_vector("member scores", members)
    n = finite_vector("non-member scores", nonmembers)
    order = np.lexsort((np.arange(m.size), m))[: max(0, k)]
    ratio = log_likelihood_ratios(m, n)[order]
    records = tuple(
        ExposedRecord(int(i), float(m[i]), float(r)) for i, r in zip(order, ratio, strict=True)
    )
    return records, "isotonic"
