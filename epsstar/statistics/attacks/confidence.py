"""The attacks' input: the log-odds of the probability a model gives the true label.

``φ = log(p_y / (1 − p_y))``, the logit scaling of Carlini et al. 2022 ("Membership
Inference Attacks From First Principles", IEEE S&P, §IV: it makes the confidence of
one record across models close to Gaussian). It is minus the Epsilon* paper's logit loss
(Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models", footnote 1), so from
logits it is exact: ``φ = z_y − logsumexp_{j≠y} z_j`` (:mod:`epsstar.statistics.losses`). From
probabilities ``p_y`` is clipped to ``[ε, 1 − ε]`` with ε the float64 machine epsilon first.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from epsstar.exceptions import InsufficientDataError, InvalidInputError
from epsstar.statistics._validation import FloatArray, finite_vector
from epsstar.statistics.losses import PROBABILITY_CLIP

__all__ = ["log_odds", "log_odds_matrix", "probability_from_log_odds"]


def log_odds(probabilities: ArrayLike, *, name: str = "probabilities") -> FloatArray:
    """``log p − log(1 − p)`` of probabilities in [0, 1], clipped to ``[ε, 1 − ε]`` first."""
    values = finite_vector(name, probabilities)
    bad = (values < 0.0) | (values > 1.0)
    if bad.any():
        index = int(np.flatnonzero(bad)[0])
        raise InvalidInputError(
            f"{name} must be probabilities in [0, 1]; {int(bad.sum())} value(s) are not, the "
            f"first at index {index}. Found {values[index]}."
        )
    clipped = np.clip(values, PROBABILITY_CLIP, 1.0 - PROBABILITY_CLIP)
    result: FloatArray = np.log(clipped) - np.log1p(-clipped)
    return result


def probability_from_log_odds(phi: FloatArray) -> FloatArray:
    """``p = 1 / (1 + e^{−φ})``, the inverse of :func:`log_odds` (exact for any finite φ)."""
    from scipy.special import expit

    result: FloatArray = expit(phi)
    return result


def log_odds_matrix(name: str, values: ArrayLike, n_records: int) -> FloatArray:
    """A ``(K, n_records)`` float64 copy of finite log-odds, one row per reference model.

    A 1-D array of ``n_records`` values is one reference model.
    """
    try:
        array = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidInputError(f"{name} must be numeric. Found {type(values).__name__}.") from None
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2 or array.shape[1] != n_records:
        raise InvalidInputError(
            f"{name} must have one row per reference model and one column per record "
            f"({n_records}). Found shape {array.shape}."
        )
    if array.shape[0] == 0:
        raise InsufficientDataError(f"{name} needs at least 1 reference model. Found 0.")
    bad = ~np.isfinite(array)
    if bad.any():
        row, column = np.argwhere(bad)[0]
        raise InvalidInputError(
            f"{name} must be finite; {int(bad.sum())} value(s) are not, the first at model "
            f"{int(row)}, record {int(column)}. Found {array[row, column]}."
        )
    return array
