"""Epsilon* within slices of the records: one estimate per group, with simultaneous bounds.

A slice is the set of records that share a value of one column (a class label, a sex, a
region): its members are the training records with that value and its non-members the
population records with it. Within a slice the membership test is the same loss (or
attack-score) threshold test, so Epsilon* of the slice is eq. 7 of
Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models" on the slice's two
score sets, estimated by the same method at the same δ as the whole audit, so that slices compare
with the headline and with each other.

A slice with fewer records on either side than the method needs gets no number: its
estimate is ``None`` and ``unavailable`` says why.

Simultaneous lower bounds. Reading m slices' lower bounds and pointing at the largest is
m tests; each slice's held-out Clopper-Pearson bound
(:func:`epsstar.statistics.bounds.held_out_bound.split_lower_bound`) is therefore computed at
confidence ``1 - (1 - c)/m`` (Bonferroni), so that every bound of the table holds at
once with probability at least ``c``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from epsstar.exceptions import DegenerateDataError, InsufficientDataError, InvalidInputError
from epsstar.statistics._validation import FloatArray, check_positive_int
from epsstar.statistics.bounds.from_counts import EpsilonLowerBound, bonferroni_confidence
from epsstar.statistics.bounds.held_out_bound import split_lower_bound
from epsstar.statistics.estimators.estimator import epsilon_star, estimate
from epsstar.statistics.estimators.methods import Bootstrap, EstimatorConfig
from epsstar.statistics.results import EpsilonStarResult

__all__ = [
    "SliceEstimate",
    "SliceTable",
    "SlicedScores",
    "slice_estimates",
]


@dataclass(frozen=True, slots=True)
class SliceEstimate:
    """One slice: its record counts and, when it holds enough records, its estimates.

    ``epsilon`` is the headline method's estimate (with its interval when asked for),
    ``empirical`` the empirical Epsilon* and ``lower_bound`` the held-out bound at the
    table's per-slice confidence; all three are ``None`` when ``unavailable`` says why.
    """

    n_members: int
    n_nonmembers: int
    epsilon: EpsilonStarResult | None = None
    empirical: EpsilonStarResult | None = None
    lower_bound: EpsilonLowerBound | None = None
    unavailable: str | None = None


@dataclass(frozen=True, slots=True)
class SliceTable:
    """Every slice's estimates, in code order, and the confidence of each lower bound."""

    estimates: tuple[SliceEstimate, ...]
    confidence_each: float


@dataclass(frozen=True, slots=True)
class SlicedScores:
    """Both sides' scores and each record's slice, a code in ``0 .. n_slices - 1``."""

    members: FloatArray
    nonmembers: FloatArray
    member_codes: NDArray[np.int64]
    nonmember_codes: NDArray[np.int64]
    n_slices: int

    def __post_init__(self) -> None:
        check_positive_int("n_slices", self.n_slices)
        for scores, codes, side in (
            (self.members, self.member_codes, "member"),
            (self.nonmembers, self.nonmember_codes, "non-member"),
        ):
            if scores.shape != codes.shape:
                raise InvalidInputError(
                    f"{side} scores and slice codes must have one code per score. Found "
                    f"{scores.shape} scores and {codes.shape} codes."
                )
            if codes.size and (codes.min() < 0 or codes.max() >= self.n_slices):
                raise InvalidInputError(
                    f"{side} slice codes must lie in 0..{self.n_slices - 1}. Found "
                    f"{int(codes.min())}..{int(codes.max())}."
                )

    def counts(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Records per slice on each side."""
        return (
            np.bincount(self.member_codes, minlength=self.n_slices),
            np.bincount(self.nonmember_codes, minlength=self.n_slices),
        )

    def groups(self) -> Iterator[tuple[FloatArray, FloatArray]]:
        """Each slice's (member scores, non-member scores), in code order."""
        n_members, n_nonmembers = self.counts()
        member_order = np.argsort(self.member_codes, kind="stable")
        nonmember_order = np.argsort(self.nonmember_codes, kind="stable")
        members = np.split(self.members[member_order], np.cumsum(n_members)[:-1])
        nonmembers = np.split(self.nonmembers[nonmember_order], np.cumsum(n_nonmembers)[:-1])
        yield from zip(members, nonmembers, strict=True)


def slice_estimates(
    scored: SlicedScores,
    config: EstimatorConfig,
    *,
    delta: float,
    minimum: int,
    confidence: float = 0.95,
    seed: int = 0,
    interval: Bootstrap | None = None,
) -> SliceTable:
    """One :class:`SliceEstimate` per slice, in code order.

    Slices with fewer than ``minimum`` records on either side are not estimated. The
    lower bounds are at :func:`bonferroni_confidence` over the slices estimated. Data on
    which the method cannot run (every score equal, say) leave the slice unavailable,
    with the reason, instead of stopping the table.
    """
    fewest = check_positive_int("minimum", minimum)
    n_members, n_nonmembers = scored.counts()
    enough = (n_members >= fewest) & (n_nonmembers >= fewest)
    each = bonferroni_confidence(confidence, int(enough.sum()))
    estimates = []
    for index, (members, nonmembers) in enumerate(scored.groups()):
        counts = (int(n_members[index]), int(n_nonmembers[index]))
        if not enough[index]:
            reason = f"too few records: the estimate needs at least {fewest} on each side"
            estimates.append(SliceEstimate(*counts, unavailable=reason))
            continue
        estimates.append(_estimated(members, nonmembers, config, delta, each, seed, interval))
    return SliceTable(tuple(estimates), each)


def _estimated(
    members: FloatArray,
    nonmembers: FloatArray,
    config: EstimatorConfig,
    delta: float,
    confidence: float,
    seed: int,
    interval: Bootstrap | None,
) -> SliceEstimate:
    """The estimates of one slice, or the reason the method cannot give them."""
    counts = (members.size, nonmembers.size)
    try:
        headline = estimate(members, nonmembers, config, delta=delta, seed=seed, interval=interval)
        empirical = epsilon_star(members, nonmembers, delta=delta, method="empirical")
        bound = split_lower_bound(
            members, nonmembers, delta=delta, confidence=confidence, seed=seed
        )
    except (InsufficientDataError, DegenerateDataError) as error:
        return SliceEstimate(*counts, unavailable=str(error).rstrip("."))
    return SliceEstimate(*counts, epsilon=headline, empirical=empirical, lower_bound=bound)
