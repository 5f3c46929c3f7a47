"""The columns a blind classifier is fitted on when a table has more than it can afford.

The trees' cost grows with the columns: scikit-learn bins every column before each fit
(about a millisecond a column, whatever the rows), and every tree reads every column.
:func:`screened_columns` keeps the ``most`` columns whose values lie most differently among
members and non-members: a column's score is the largest of three two-sample z statistics
over the rows given, of its mean (missing values left out), of its spread (the squared
distance to the pooled mean) and of its share of missing values. Columns listed in
``always`` (the label) are kept first. A shift in one column, or in a column's spread or
missingness, is kept by the screen; a shift in the joint law of columns whose margins do
not move is found only among the columns kept.

It costs nothing in validity as long as it reads only the rows the classifier is fitted
on: a row it scores then never chose its columns.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["screened_columns"]


def _z(
    values: NDArray[np.float32], sides: NDArray[np.float32], counts: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Each column's two-sample z statistic of its mean between the two rows of ``sides``
    (0/1 weights of the rows), with ``counts`` values present in each (missing values are 0
    in ``values`` and left out of the counts); a column constant on both sides at different
    values: inf."""
    n = np.maximum(counts, 1.0)
    mean = (sides @ values) / n
    square = np.maximum((sides @ (values * values)) / n - mean**2, 0.0)
    variance = square * n / np.maximum(n - 1.0, 1.0)
    difference = np.where(counts.min(axis=0) > 0, mean[0] - mean[1], 0.0)
    spread = np.sqrt((variance / n).sum(axis=0))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(spread > 0, difference / spread, np.where(difference != 0, np.inf, 0.0))
    return np.abs(z)


def screened_columns(
    matrix: NDArray[np.floating], member: NDArray[np.bool_], *, most: int, always: Sequence[int]
) -> NDArray[np.intp]:
    """The indices, ascending, of at most ``most`` columns of ``matrix`` (rows in
    ``member`` against the others; see the module docstring): every column when there are
    no more than ``most``."""
    width = matrix.shape[1]
    if width <= most:
        return np.arange(width)
    sides = np.stack([member, ~member]).astype(np.float32)
    rows = np.repeat(sides.sum(axis=1, dtype=np.float64)[:, None], width, axis=1)
    # Standardised in float32: the z statistics do not change with a column's location or
    # scale, and a standardised value's fourth power stays far within float32's range.
    values = np.array(matrix, dtype=np.float32)
    missing = np.isnan(values)
    present = (~missing).astype(np.float32)
    counts = (sides @ present).astype(np.float64) if missing.any() else rows
    values[missing] = 0.0
    total = np.maximum(counts.sum(axis=0), 1.0)
    values -= (values.sum(axis=0, dtype=np.float64) / total).astype(np.float32)
    values[missing] = 0.0
    scale = np.sqrt(np.square(values).sum(axis=0, dtype=np.float64) / total)
    values /= np.where(scale > 0, scale, 1.0).astype(np.float32)
    score = np.maximum(_z(values, sides, counts), _z(values * values, sides, counts))
    if counts is not rows:
        score = np.maximum(score, _z(present, sides, rows))
    score[list(always)] = np.inf
    order = np.argsort(-score, kind="stable")
    return np.sort(order[:most])
