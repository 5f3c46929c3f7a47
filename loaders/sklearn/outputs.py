"""Which prediction method of a scikit-learn classifier gives exact losses.

See :mod:`epsstar.loaders.sklearn` for the rule; :func:`choose_method` applies it to the
outputs of one batch of records and says why.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit, softmax

from epsstar.audit.model.output_reading import OutputReading
from epsstar.statistics.names import OutputKind

__all__ = ["RELATIVE_TOLERANCE", "Method", "choose_method"]

RELATIVE_TOLERANCE: Final = 1e-9
"""How closely a transformed score must reproduce ``predict_proba``."""

_ABSOLUTE_TOLERANCE: Final = 1e-15  # the rounding of 1 - p near p = 1


@dataclass(frozen=True, slots=True)
class Method:
    """A prediction method (its name), the kind of its outputs and why it was chosen."""

    name: str
    kind: OutputKind
    reading: OutputReading


def _reproduces(probabilities: NDArray[np.float64], candidate: NDArray[np.float64]) -> bool:
    return candidate.shape == probabilities.shape and bool(
        np.allclose(candidate, probabilities, rtol=RELATIVE_TOLERANCE, atol=_ABSOLUTE_TOLERANCE)
    )


def _from_scores(scores: NDArray[np.float64], width: int) -> NDArray[np.float64] | None:
    """The probabilities the scores stand for as logits, or None if they cannot."""
    if not np.all(np.isfinite(scores)):
        return None
    if scores.ndim == 1 and width == 2:
        positive = expit(scores)
        return np.column_stack([expit(-scores), positive])
    if scores.ndim == 2 and scores.shape[1] == width:
        return np.asarray(softmax(scores, axis=1), dtype=np.float64)
    return None


def _call(method: Callable[[Any], Any], data: Any) -> NDArray[np.float64] | None:
    """The method's outputs, or None if it fails; log(0) = -inf is refused by the caller."""
    try:
        with np.errstate(divide="ignore", over="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.asarray(method(data), dtype=np.float64)
    except Exception:
        return None


def _chosen(name: str, kind: OutputKind, reason: str) -> Method:
    return Method(name, kind, OutputReading(kind, "loader", reason))


def choose_method(estimator: Any, data: Any) -> Method:
    """The first method of the rule that holds on ``data`` (the first batch of records).

    The estimator must have ``predict_proba``; the caller handles one without it.
    """
    probabilities = np.asarray(estimator.predict_proba(data), dtype=np.float64)
    if probabilities.ndim != 2:
        return _chosen("predict_proba", "probabilities", "predict_proba gives the probabilities")
    width = probabilities.shape[1]
    if hasattr(estimator, "decision_function"):
        scores = _call(estimator.decision_function, data)
        implied = None if scores is None else _from_scores(scores, width)
        if implied is not None and _reproduces(probabilities, implied):
            return _chosen(
                "decision_function",
                "logits",
                "decision_function reproduces predict_proba; losses from it (exact)",
            )
    if hasattr(estimator, "predict_log_proba"):
        logs = _call(estimator.predict_log_proba, data)
        if (
            logs is not None
            and logs.shape == probabilities.shape
            and np.all(np.isfinite(logs))
            and _reproduces(probabilities, np.exp(logs))
        ):
            with np.errstate(divide="ignore"):
                plain = np.log(probabilities)
            if not np.array_equal(logs, plain):
                return _chosen(
                    "predict_log_proba",
                    "logits",
                    "predict_log_proba reproduces predict_proba and is more accurate than "
                    "its logarithm; losses from it (exact)",
                )
    return _chosen(
        "predict_proba",
        "probabilities",
        "neither decision_function nor predict_log_proba reproduces predict_proba more "
        "accurately; losses from the probabilities",
    )
