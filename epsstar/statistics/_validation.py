"""Argument checks shared by the core, with one message style.

Every message names the argument, states what is allowed and ends with the
value that was found, e.g. ``"delta must be in (0, 0.5). Found 0.7."``; the wording of a
range and of a count is that of the options records' constraints
(:mod:`epsstar.plumbing.records.constraints`), said there once.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from epsstar.exceptions import InsufficientDataError, InvalidInputError
from epsstar.plumbing.records.constraints import Closed, InRange, WholeNumber

FloatArray = NDArray[np.float64]

__all__ = [
    "DELTA",
    "FloatArray",
    "check_confidence",
    "check_delta",
    "check_in_range",
    "check_positive_int",
    "finite_vector",
]


def check_in_range(
    name: str,
    value: Any,
    low: float,
    high: float,
    *,
    low_inclusive: bool = False,
    high_inclusive: bool = False,
) -> float:
    """Return ``value`` as a float if it lies in the stated interval, else raise."""
    closed: Closed = (
        ("both" if high_inclusive else "left")
        if low_inclusive
        else ("right" if high_inclusive else "neither")
    )
    return InRange(low, high, closed).check(name, value)


#: δ of an (ε, δ) statement, as an options record declares it: in (0, 0.5). For δ ≥ 0.5 the
#: admissible rates (δ, 1 − δ) of Definition 2 are empty.
DELTA: Final = InRange(0.0, 0.5)


def check_delta(delta: Any, *, allow_zero: bool = False) -> float:
    """δ of an (ε, δ) statement (:data:`DELTA`), or in [0, 0.5) when ``allow_zero``."""
    return InRange(DELTA.low, DELTA.high, "left" if allow_zero else "neither").check("delta", delta)


def check_confidence(confidence: Any) -> float:
    """A confidence level in (0, 1)."""
    return check_in_range("confidence", confidence, 0.0, 1.0)


def check_positive_int(name: str, value: Any, *, minimum: int = 1) -> int:
    """An integer ≥ ``minimum`` (booleans are refused)."""
    return WholeNumber(minimum).check(name, value)


def finite_vector(name: str, values: object, *, min_size: int = 1) -> FloatArray:
    """A 1-D float64 copy of ``values``; refuses NaN/inf, other shapes and too few entries."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name} must be numeric. Found {type(values).__name__}.") from None
    if array.ndim == 2 and 1 in array.shape:
        array = array.reshape(-1)
    if array.ndim != 1:
        raise InvalidInputError(f"{name} must be one-dimensional. Found shape {array.shape}.")
    if array.size < min_size:
        raise InsufficientDataError(f"{name} needs at least {min_size} values. Found {array.size}.")
    bad = ~np.isfinite(array)
    if bad.any():
        index = int(np.flatnonzero(bad)[0])
        raise InvalidInputError(
            f"{name} must be finite; {int(bad.sum())} value(s) are not, the first at index "
            f"{index}. Found {array[index]}."
        )
    return np.array(array, dtype=np.float64, copy=True)
