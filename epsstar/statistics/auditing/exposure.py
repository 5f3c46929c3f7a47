"""The exposure of canaries a training run included, estimated from those it left out.

Carlini et al. 2019, "The secret sharer: evaluating and testing unintended memorization in
neural networks" (§4): a canary's exposure is log2 |R| − log2 rank, where rank is its place
among all |R| candidate secrets ordered by the model's loss (1: the lowest loss). Enumerating
the candidates is out of reach for a language model's secrets, so the candidates here are the
canaries the run left out, drawn from the same distribution as the included ones: an
included canary's rank is one plus the number of left-out canaries whose score is more
member-like than its own (ties count half), among the n_out + 1 candidates it and they make,
and its exposure is log2(n_out + 1) − log2(rank), from 0 (no left-out canary looks less like
a member) to log2(n_out + 1) (every one does). Its largest value is set by the number of
left-out canaries, not by the secret's space, so exposures of audits with different canary
counts are not comparable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from epsstar.exceptions import InsufficientDataError
from epsstar.plumbing.records.json_records import JsonRecord
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.bounds.held_out_bound import Direction

__all__ = ["Exposure", "canary_exposures", "exposure_summary"]


@dataclass(frozen=True, slots=True)
class Exposure(JsonRecord):
    """The included canaries' exposures: their mean and largest, the largest possible
    (log2(n_out + 1)), and how many canaries were in and out."""

    mean: float
    largest: float
    possible: float
    included: int
    left_out: int


def canary_exposures(scores: FloatArray, included: np.ndarray, direction: Direction) -> FloatArray:
    """Each included canary's exposure among the left-out ones (see the module), in order."""
    values = np.asarray(scores, dtype=np.float64)
    inside = np.asarray(included, dtype=bool)
    if values.shape != inside.shape or values.ndim != 1:
        raise InsufficientDataError(
            f"exposure needs one inclusion bit per score. Found {values.shape} scores and "
            f"{inside.shape} bits."
        )
    member_like = -values if direction == "members_lower" else values
    outside = np.sort(member_like[~inside])
    if outside.size == 0 or not inside.any():
        raise InsufficientDataError(
            "exposure needs canaries both included and left out. Found "
            f"{int(inside.sum())} included and {outside.size} left out."
        )
    mine = member_like[inside]
    above = outside.size - np.searchsorted(outside, mine, side="right")
    tied = np.searchsorted(outside, mine, side="right") - np.searchsorted(outside, mine)
    rank = 1.0 + above + 0.5 * tied
    return np.asarray(math.log2(outside.size + 1) - np.log2(rank), dtype=np.float64)


def exposure_summary(scores: FloatArray, included: np.ndarray, direction: Direction) -> Exposure:
    """The mean and largest of :func:`canary_exposures`."""
    exposures = canary_exposures(scores, included, direction)
    left_out = int(np.count_nonzero(~np.asarray(included, dtype=bool)))
    return Exposure(
        mean=float(exposures.mean()),
        largest=float(exposures.max()),
        possible=math.log2(left_out + 1),
        included=int(exposures.size),
        left_out=left_out,
    )
