"""Per-record losses for membership inference: one number per (label, prediction) pair.

Epsilon* compares the losses of a model on its training records with its losses on
records it never saw (Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models",
footnote 1). Sign convention: a confident correct prediction has a LOW (very negative) loss and a
confident wrong prediction a HIGH loss, so members of the training set tend to have low losses.

Losses, with ``y`` the true label and ``p_y`` the probability of the true class:

``"logit"`` (footnote 1)
    binary, from ``p = P(y = 1)``: ``l = (1 − 2y)(log p − log(1 − p))``;
    binary, from the log-odds ``z`` of ``y = 1``: ``l = (1 − 2y) z``;
    ``K`` classes: ``l = −(log p_y − log(1 − p_y))``; from logits ``z`` it is
    ``l = logsumexp_{j≠y} z_j − z_y``, since ``log(p_y / (1 − p_y)) = z_y − logsumexp_{j≠y} z_j``.
``"cross_entropy"``
    ``l = −log p_y``; from logits ``l = logsumexp_j z_j − z_y`` (``K`` classes) or
    ``l = log(1 + exp((1 − 2y) z))`` (binary log-odds).

Probabilities of exactly 0 or 1: before any logarithm, probabilities are clipped to
``[PROBABILITY_CLIP, 1 − PROBABILITY_CLIP]`` with ``PROBABILITY_CLIP`` the float64
machine epsilon ``2**-52 ≈ 2.22e-16``, and ``log(1 − p)`` is computed as ``log1p(−p)``.
Hence every logit loss from probabilities lies in ``[−MAX_ABS_LOGIT, MAX_ABS_LOGIT]``
with ``MAX_ABS_LOGIT = log((1 − ε) / ε) ≈ 36.0437``, and every cross-entropy from
probabilities in ``[≈2.2e-16, ≈36.0437]``. Losses from logits are exact and need no
clipping; they are refused only if logits differ by more than the float64 range.

Shapes: predictions that are 1-D or have one column are binary (``P(y = 1)`` or its
log-odds; labels 0 or 1); predictions with ``K ≥ 2`` columns are per-class scores
(labels ``0 … K−1``). Rows of class probabilities must sum to 1 within
``ROW_SUM_TOLERANCE`` (1e-3; float32 softmax outputs are off by ~1e-7); they are not
renormalised. Two columns are read as class probabilities, so the loss uses the true
class's column ``p_y``, which equals the binary formula when the row sums to 1.
Labels are integers (booleans too), or floats that are whole numbers.
Every function returns a new 1-D float64 array with one loss per record.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from epsstar.exceptions import InsufficientDataError, InvalidInputError
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.names import LOSSES, OUTPUT_KINDS, LossName, OutputKind

__all__ = [
    "MAX_ABS_LOGIT",
    "PROBABILITY_CLIP",
    "ROW_SUM_TOLERANCE",
    "LossName",
    "OutputKind",
    "binary_cross_entropy_from_logits",
    "binary_cross_entropy_from_probabilities",
    "binary_logit_loss_from_logits",
    "binary_logit_loss_from_probabilities",
    "compute_losses",
    "multiclass_cross_entropy_from_logits",
    "multiclass_cross_entropy_from_probabilities",
    "multiclass_logit_loss_from_logits",
    "multiclass_logit_loss_from_probabilities",
    "rows_not_summing_to_one",
]

PROBABILITY_CLIP: Final[float] = float(np.finfo(np.float64).eps)
"""Probabilities are clipped to ``[PROBABILITY_CLIP, 1 − PROBABILITY_CLIP]`` before logs."""

MAX_ABS_LOGIT: Final[float] = math.log1p(-PROBABILITY_CLIP) - math.log(PROBABILITY_CLIP)
"""Largest ``|log p − log(1 − p)|`` after clipping, ``log((1 − ε) / ε) ≈ 36.0437``."""

ROW_SUM_TOLERANCE: Final[float] = 1e-3
"""Largest accepted ``|Σ_j p_j − 1|`` for a row of class probabilities."""


IntArray = NDArray[np.intp]


# --------------------------------------------------------------------------- checks


def _where(array: NDArray[Any], flat_index: int) -> str:
    if array.ndim == 1:
        return f"index {flat_index}"
    row, column = np.unravel_index(flat_index, array.shape)
    return f"row {int(row)}, column {int(column)}"


def _refuse(name: str, rule: str, array: NDArray[Any], bad: NDArray[np.bool_]) -> None:
    """Raise naming how many entries break ``rule``, where the first is, and its value."""
    if bad.any():
        index = int(np.flatnonzero(bad)[0])
        raise InvalidInputError(
            f"{name} must be {rule}; {int(bad.sum())} value(s) are not, the first at "
            f"{_where(array, index)}. Found {array.reshape(-1)[index]}."
        )


def _numeric(name: str, values: ArrayLike) -> NDArray[Any]:
    try:
        array = np.asarray(values)
        if array.dtype.kind == "O":
            array = array.astype(np.float64)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name} must be numeric. Found {type(values).__name__}.") from None
    if array.dtype.kind not in "biuf":
        raise InvalidInputError(f"{name} must be numeric. Found dtype {array.dtype}.")
    return array


def _predictions(predictions: ArrayLike, outputs: str, columns: str) -> FloatArray:
    """Checked float64 copy: 1-D for binary scores, ``n × K`` (K ≥ 2) for class scores.

    ``columns`` is ``"binary"`` (1-D, one or two columns), ``"classes"`` (two or more
    columns) or ``"any"``; a single column is flattened to 1-D.
    """
    array = np.array(_numeric("predictions", predictions), dtype=np.float64)
    shape = array.shape
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim not in (1, 2):
        raise InvalidInputError(
            f"predictions must be a 1-D array or a 2-D array with one row per record. "
            f"Found shape {shape}."
        )
    if columns == "binary" and array.ndim == 2 and array.shape[1] != 2:
        raise InvalidInputError(
            f"predictions of a binary model must be 1-D or have one or two columns. "
            f"Found shape {shape}."
        )
    if columns == "classes" and array.ndim != 2:
        raise InvalidInputError(
            f"predictions of a multi-class model must be 2-D with at least 2 columns. "
            f"Found shape {shape}."
        )
    if array.ndim == 2 and array.shape[1] == 0:
        raise InvalidInputError(f"predictions must have at least 1 column. Found shape {shape}.")
    if array.shape[0] == 0:
        raise InsufficientDataError("predictions needs at least 1 record. Found 0.")
    if outputs == "probabilities":
        # Written so that NaN (every comparison False) counts as bad as well.
        _refuse("predictions", "probabilities in [0, 1]", array, ~((array >= 0.0) & (array <= 1.0)))
        if array.ndim == 2 and (off := rows_not_summing_to_one(array)) is not None:
            count, worst = off
            raise InvalidInputError(
                f"rows of class probabilities must sum to 1 within {ROW_SUM_TOLERANCE:g}; "
                f"{count} row(s) do not, the worst is row {worst}. "
                f"Found sum {array[worst].sum()}."
            )
    else:
        _refuse("predictions", "finite logits", array, ~np.isfinite(array))
    return array


def _labels(labels: ArrayLike, n_records: int, n_classes: int) -> IntArray:
    """Checked class indices in ``0 … n_classes − 1``, one per record."""
    array = _numeric("labels", labels)
    if array.ndim == 2 and 1 in array.shape:
        array = array.reshape(-1)
    if array.ndim != 1:
        raise InvalidInputError(f"labels must be one-dimensional. Found shape {array.shape}.")
    if array.size == 0:
        raise InsufficientDataError("labels needs at least 1 value. Found 0.")
    if array.size != n_records:
        raise InvalidInputError(
            f"labels and predictions must have the same number of records. "
            f"Found {array.size} labels and {n_records} predictions."
        )
    if array.dtype.kind == "f":
        _refuse("labels", "whole numbers", array, ~np.isfinite(array) | (array != np.floor(array)))
    allowed = "0 or 1" if n_classes == 2 else f"class indices 0 … {n_classes - 1}"
    _refuse("labels", allowed, array, (array < 0) | (array >= n_classes))
    return array.astype(np.intp)


# -------------------------------------------------------------------------- kernels


def _clip(probabilities: FloatArray) -> FloatArray:
    return np.clip(probabilities, PROBABILITY_CLIP, 1.0 - PROBABILITY_CLIP)


def _log_odds(probabilities: FloatArray) -> FloatArray:
    """``log p − log(1 − p)`` of clipped probabilities."""
    clipped = _clip(probabilities)
    return np.log(clipped) - np.log1p(-clipped)


def _true_class(scores: FloatArray, labels: IntArray) -> FloatArray:
    return scores[np.arange(labels.size), labels]


def _logsumexp_rows(scores: FloatArray, *, overwrite: bool = False) -> FloatArray:
    """``log Σ_j exp(scores_ij)`` per row; entries of ``−inf`` drop out of the sum.

    ``overwrite=True`` lets it work in ``scores``' own memory (the same numbers, one
    temporary array fewer per batch)."""
    peak: FloatArray = scores.max(axis=1)
    shifted = scores if overwrite else scores.copy()
    shifted -= peak[:, None]
    np.exp(shifted, out=shifted)
    total: FloatArray = shifted.sum(axis=1)
    return peak + np.log(total)


def _logit_from_probabilities(labels: IntArray, scores: FloatArray) -> FloatArray:
    if scores.ndim == 1:
        return (1.0 - 2.0 * labels) * _log_odds(scores)
    return -_log_odds(_true_class(scores, labels))


def _logit_from_logits(labels: IntArray, scores: FloatArray) -> FloatArray:
    if scores.ndim == 1:
        return (1.0 - 2.0 * labels) * scores
    others = scores.copy()
    others[np.arange(labels.size), labels] = -np.inf
    return _logsumexp_rows(others, overwrite=True) - _true_class(scores, labels)


def _cross_entropy_from_probabilities(labels: IntArray, scores: FloatArray) -> FloatArray:
    clipped = _clip(scores)
    if scores.ndim == 1:
        return np.where(labels == 1, -np.log(clipped), -np.log1p(-clipped))
    return -np.log(_true_class(clipped, labels))


def _cross_entropy_from_logits(labels: IntArray, scores: FloatArray) -> FloatArray:
    if scores.ndim == 1:
        return np.logaddexp(0.0, (1.0 - 2.0 * labels) * scores)
    return _logsumexp_rows(scores) - _true_class(scores, labels)


_Kernel = Callable[[IntArray, FloatArray], FloatArray]

_KERNELS: Final[dict[tuple[str, str], _Kernel]] = {
    ("logit", "probabilities"): _logit_from_probabilities,
    ("logit", "logits"): _logit_from_logits,
    ("cross_entropy", "probabilities"): _cross_entropy_from_probabilities,
    ("cross_entropy", "logits"): _cross_entropy_from_logits,
}


def _run(
    labels: ArrayLike, predictions: ArrayLike, loss: str, outputs: str, columns: str
) -> FloatArray:
    scores = _predictions(predictions, outputs, columns)
    n_classes = 2 if scores.ndim == 1 else scores.shape[1]
    checked = _labels(labels, scores.shape[0], n_classes)
    with np.errstate(over="ignore", invalid="ignore"):
        losses = np.ascontiguousarray(_KERNELS[loss, outputs](checked, scores), dtype=np.float64)
    # Only logits whose differences exceed the float64 range (~1.8e308) can get here.
    _refuse("losses", "finite (logits too far apart for float64)", losses, ~np.isfinite(losses))
    return losses


# --------------------------------------------------------------------------- public


def rows_not_summing_to_one(rows: NDArray[np.float64]) -> tuple[int, int] | None:
    """(how many rows, the worst row) whose sum is off 1 by more than the tolerance, or None."""
    deviation = np.abs(rows.sum(axis=1) - 1.0)
    off = deviation > ROW_SUM_TOLERANCE
    if not off.any():
        return None
    return int(off.sum()), int(np.argmax(deviation))


def compute_losses(
    labels: ArrayLike,
    predictions: ArrayLike,
    *,
    loss: LossName = "logit",
    outputs: OutputKind = "probabilities",
) -> FloatArray:
    """Per-record losses of any classifier; see the module docstring for the formulas.

    ``predictions`` holding one value per record (1-D or one column) are binary:
    ``P(y = 1)`` or, with ``outputs="logits"``, its log-odds. With ``K ≥ 2`` columns
    they are class probabilities (rows summing to 1) or class logits. ``loss`` is
    ``"logit"`` (footnote 1 of Negoescu et al.) or ``"cross_entropy"``.
    """
    if loss not in LOSSES:
        raise InvalidInputError(f"loss must be {LOSSES.alternatives()}. Found {loss!r}.")
    if outputs not in OUTPUT_KINDS:
        raise InvalidInputError(
            f"outputs must be {OUTPUT_KINDS.alternatives()}. Found {outputs!r}."
        )
    return _run(labels, predictions, loss, outputs, "any")


def binary_logit_loss_from_probabilities(labels: ArrayLike, probabilities: ArrayLike) -> FloatArray:
    """``l = (1 − 2y)(log p − log(1 − p))`` with ``p = P(y = 1)`` clipped to ``[ε, 1 − ε]``.

    ``probabilities`` is 1-D, one column ``P(y = 1)``, or two columns
    ``[P(y = 0), P(y = 1)]``; two columns are read as class probabilities and give
    ``−(log p_y − log(1 − p_y))``, the same value when the row sums to 1.
    """
    return _run(labels, probabilities, "logit", "probabilities", "binary")


def binary_logit_loss_from_logits(labels: ArrayLike, logits: ArrayLike) -> FloatArray:
    """``l = (1 − 2y) z`` exactly, ``z`` the log-odds of ``y = 1``.

    Two columns ``[z_0, z_1]`` are class logits, with log-odds ``z_1 − z_0``.
    """
    return _run(labels, logits, "logit", "logits", "binary")


def multiclass_logit_loss_from_probabilities(
    labels: ArrayLike, probabilities: ArrayLike
) -> FloatArray:
    """``l = −(log p_y − log(1 − p_y))`` for ``n × K`` probability rows.

    ``p_y`` is clipped to ``[ε, 1 − ε]`` first.
    """
    return _run(labels, probabilities, "logit", "probabilities", "classes")


def multiclass_logit_loss_from_logits(labels: ArrayLike, logits: ArrayLike) -> FloatArray:
    """``l = logsumexp_{j≠y} z_j − z_y`` for ``n × K`` logits (K ≥ 2), exact and stable.

    Equal to ``−(log p_y − log(1 − p_y))`` for ``p = softmax(z)``, without clipping.
    """
    return _run(labels, logits, "logit", "logits", "classes")


def binary_cross_entropy_from_probabilities(
    labels: ArrayLike, probabilities: ArrayLike
) -> FloatArray:
    """``l = −log p_y``: ``−log p`` if ``y = 1``, ``−log(1 − p)`` if ``y = 0``, ``p`` clipped.

    Accepts the same shapes as :func:`binary_logit_loss_from_probabilities`.
    """
    return _run(labels, probabilities, "cross_entropy", "probabilities", "binary")


def binary_cross_entropy_from_logits(labels: ArrayLike, logits: ArrayLike) -> FloatArray:
    """``l = −log σ((2y − 1) z) = log(1 + exp((1 − 2y) z))`` for log-odds ``z``, stably."""
    return _run(labels, logits, "cross_entropy", "logits", "binary")


def multiclass_cross_entropy_from_probabilities(
    labels: ArrayLike, probabilities: ArrayLike
) -> FloatArray:
    """``l = −log p_y`` for ``n × K`` probability rows, ``p_y`` clipped to ``[ε, 1 − ε]``."""
    return _run(labels, probabilities, "cross_entropy", "probabilities", "classes")


def multiclass_cross_entropy_from_logits(labels: ArrayLike, logits: ArrayLike) -> FloatArray:
    """``l = logsumexp_j z_j − z_y`` (minus the log-softmax of the true class), stably."""
    return _run(labels, logits, "cross_entropy", "logits", "classes")
