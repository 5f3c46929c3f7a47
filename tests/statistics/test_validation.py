"""The shared argument checks of the statistics (epsstar/statistics/_validation.py)."""

from __future__ import annotations

import numpy as np
import pytest

from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import finite_vector


def test_a_missing_value_is_refused_as_not_finite() -> None:
    # None reads as NaN only through the float64 conversion; an object array would reach
    # the finiteness check and fail there with a TypeError instead of this message.
    with pytest.raises(InvalidInputError, match=r"^losses must be finite; 1 value\(s\) are not"):
        finite_vector("losses", [0.5, None])


def test_the_copy_is_float64_and_flat() -> None:
    column = finite_vector("losses", np.array([[1], [2], [3]], dtype=np.int64))
    assert column.dtype == np.float64
    assert column.tolist() == [1.0, 2.0, 3.0]
