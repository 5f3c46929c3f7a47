"""Audits whose losses are shifted by their float32 tolerance, to see how far a result moves.

Point 6 of ``tests/numerics.py``: a statistic of the losses moves furthest when the training
losses all move down by their tolerance and the population's up, or the other way.
:func:`shifted_losses` does that to every loss the audit computes in this process, record by
record, from a tolerance the caller derives from each batch's model, features and
predictions.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

#: A record's loss tolerance from ``(model, features, predictions)``, where ``features()``
#: gives the batch as a float64 matrix (built only when asked: a model of text or category
#: columns has none); None leaves the model's losses alone.
LossTolerance = Callable[[Any, Callable[[], np.ndarray], np.ndarray], "np.ndarray | None"]

DIRECTIONS = (-1, 1)


@contextlib.contextmanager
def shifted_losses(direction: int, tolerance: LossTolerance) -> Iterator[None]:
    """Within the block, the losses of every streamed batch move by ``tolerance``:
    ``direction`` −1 moves the training losses down and the population's up, +1 the other
    way."""
    from epsstar.audit.engines import streaming

    predict, losses = streaming.predict_batch, streaming.batch_losses
    seen: dict[int, Any] = {}  # the features of each model's latest batch

    def predict_batch(model: Any, features: Any, reading: Any) -> Any:
        seen[id(model)] = features
        return predict(model, features, reading)

    def batch_losses(model: Any, labels: Any, predictions: Any, reading: Any) -> Any:
        found = losses(model, labels, predictions, reading)
        batch = seen[id(model)]
        moved = tolerance(model, lambda: batch.matrix(np.float64), predictions)
        if moved is None:
            return found
        sign = direction if reading.role == "train" else -direction
        return found + sign * moved

    streaming.predict_batch, streaming.batch_losses = predict_batch, batch_losses
    try:
        yield
    finally:
        streaming.predict_batch, streaming.batch_losses = predict, losses


def largest_moves(
    audit: Callable[[], Any], values: Sequence[Callable[[Any], float]], tolerance: LossTolerance
) -> list[float]:
    """How far each of ``values`` of ``audit()`` moves, at most, with the losses shifted
    either way."""
    here = audit()
    moves = [0.0] * len(values)
    for direction in DIRECTIONS:
        with shifted_losses(direction, tolerance):
            shifted = audit()
        for index, value in enumerate(values):
            moves[index] = max(moves[index], abs(value(shifted) - value(here)))
    return moves
