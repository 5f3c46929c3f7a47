"""The one-run guessing rule: "in" for the k₊ most member-like canaries, "out" for the k₋ least.

Steinke, Nasr & Jagielski 2023, "Privacy Auditing with One (1) Training Run": after one training run
every canary gets a score from the model; the auditor guesses "in" for the k₊ canaries that look
most like members, "out" for the k₋ that look least like members, and abstains on the rest. The
guesses depend on the scores alone (never on which canaries were included), which is what the
one-run bounds need.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.json_records import JsonRecord
from epsstar.statistics._validation import check_positive_int, finite_vector
from epsstar.statistics.bounds.held_out_bound import DIRECTIONS, Direction

__all__ = ["GuessCounts", "count_correct_guesses", "inclusion_bits"]


@dataclass(frozen=True, slots=True)
class GuessCounts(JsonRecord):
    """The guesses of one run: ``guesses`` = k₊ + k₋ of the ``canaries``, ``correct`` right."""

    canaries: int
    k_plus: int
    k_minus: int
    guesses: int
    correct: int
    included: int


def inclusion_bits(included: Any, size: int) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """``included`` as booleans of length ``size``; only 0/1 or booleans are accepted."""
    array = np.asarray(included)
    if array.ndim != 1 or array.size != size:
        raise InvalidInputError(
            f"included must hold one 0/1 value per canary ({size}). Found shape {array.shape}."
        )
    if array.dtype != np.bool_:
        bad = ~np.isin(array, (0, 1))
        if bad.any():
            index = int(np.flatnonzero(bad)[0])
            raise InvalidInputError(
                f"included must be 0/1 or booleans; the first other value is at index {index}. "
                f"Found {array[index].item()!r}."
            )
    return array.astype(np.bool_)


def count_correct_guesses(
    scores: ArrayLike,
    included: ArrayLike,
    *,
    k_plus: int,
    k_minus: int,
    direction: Direction,
) -> GuessCounts:
    """Apply the guessing rule to one run's canary scores and count the right guesses.

    ``direction`` says which scores look like members: ``"members_lower"`` for losses (a low
    loss suggests the canary was trained on), ``"members_higher"`` for scores that grow with
    membership. The k₊ most member-like canaries are guessed "in", the k₋ least member-like
    "out" (k₊ + k₋ ≤ m). Ties are broken by position (a stable sort), so the order of the
    canaries must not depend on which were included — draw inclusion at random after
    fixing the order, as the one-run design does anyway.
    """
    values = finite_vector("scores", scores, min_size=1)
    bits = inclusion_bits(included, values.size)
    if direction not in DIRECTIONS:
        allowed = ", ".join(repr(d) for d in DIRECTIONS)
        raise InvalidInputError(f"direction must be one of {allowed}. Found {direction!r}.")
    plus = check_positive_int("k_plus", k_plus, minimum=0)
    minus = check_positive_int("k_minus", k_minus, minimum=0)
    if plus + minus > values.size:
        raise InvalidInputError(
            f"k_plus + k_minus must be at most the number of canaries ({values.size}). "
            f"Found {plus + minus}."
        )
    member_like = -values if direction == "members_lower" else values
    order = np.argsort(-member_like, kind="stable")  # most member-like first
    guessed_in = bits[order[:plus]]
    guessed_out = bits[order[values.size - minus :]]
    correct = int(guessed_in.sum()) + int(minus - guessed_out.sum())
    return GuessCounts(
        canaries=int(values.size),
        k_plus=plus,
        k_minus=minus,
        guesses=plus + minus,
        correct=correct,
        included=int(bits.sum()),
    )
