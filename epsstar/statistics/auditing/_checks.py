"""Argument checks shared by the audit bounds (same message style as the rest of the core)."""

from __future__ import annotations

from typing import Any

from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import check_in_range, check_positive_int

__all__ = ["check_claimed_epsilon", "check_guess_counts", "check_method"]


def check_guess_counts(canaries: Any, guesses: Any, correct: Any) -> tuple[int, int, int]:
    """(m, r, v) with 1 ≤ m and 0 ≤ v ≤ r ≤ m: canaries, guesses made, correct guesses."""
    m = check_positive_int("canaries", canaries, minimum=1)
    r = check_positive_int("guesses", guesses, minimum=0)
    v = check_positive_int("correct", correct, minimum=0)
    if r > m:
        raise InvalidInputError(f"guesses must be at most the number of canaries ({m}). Found {r}.")
    if v > r:
        raise InvalidInputError(f"correct must be at most the number of guesses ({r}). Found {v}.")
    return m, r, v


def check_claimed_epsilon(epsilon: Any) -> float:
    """A claimed ε: a finite number ≥ 0."""
    return check_in_range("claimed_epsilon", epsilon, 0.0, float("inf"), low_inclusive=True)


def check_method(method: str, allowed: tuple[str, ...]) -> None:
    """``method`` is one of ``allowed`` (the bounds a function can compute)."""
    if method not in allowed:
        names = ", ".join(repr(name) for name in allowed)
        raise InvalidInputError(f"method must be one of {names}. Found {method!r}.")
