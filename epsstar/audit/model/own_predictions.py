"""The self-check of a loader against the model's own predictions on a sample of records.

A loader computes what the audit's losses come from in its own way (exact logits from raw
scores, categories mapped to codes, the trees of the best iteration), so it can be wrong
where the model is not, silently. Where the model's library can score the same records
itself (``predict_proba``, ``Booster.predict``), the loader scores the first
:data:`SAMPLE_ROWS` records of its first batch that way too, and
:func:`check_own_predictions` refuses the model, in one line naming it and the largest
difference, when the two disagree beyond what their arithmetic allows. The cost is one
extra prediction on a few hundred records, once per loaded model.

Both sides are compared as class probabilities, ``(n, K)``: one value per record is
``P(classes[1])`` (or its log-odds), and logits become probabilities through the softmax
(the logistic function for one log-odds), as the losses read them
(:mod:`epsstar.statistics.losses`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit, softmax

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.names import OutputKind

__all__ = ["SAMPLE_ROWS", "OwnPredictions", "check_own_predictions", "class_probabilities"]

SAMPLE_ROWS: Final = 256
"""Records of the first batch scored by the model's own library too."""

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class OwnPredictions:
    """What the model's library itself gives for the sample of records.

    ``method`` names the call (``"XGBClassifier.predict_proba"``), ``kind`` says whether
    ``values`` are probabilities or logits, and ``tolerance`` is the largest difference of
    a probability the two computations may show (its reason is given where it is set).
    """

    library: str
    method: str
    kind: OutputKind
    values: NDArray[Any]
    tolerance: float


def class_probabilities(values: NDArray[Any], kind: OutputKind) -> FloatArray:
    """``(n, K)`` class probabilities from one value per record or ``(n, K)`` outputs."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim == 1:
        positive = array if kind == "probabilities" else expit(array)
        negative = 1.0 - array if kind == "probabilities" else expit(-array)
        return np.column_stack([negative, positive])
    if kind == "probabilities":
        return array
    return np.asarray(softmax(array, axis=1), dtype=np.float64)


def check_own_predictions(
    source: Path, ours: NDArray[Any], kind: OutputKind, own: OwnPredictions
) -> None:
    """Refuse when the loader's outputs (``ours``, of ``kind``) on the sample differ from
    the model's own by more than ``own.tolerance`` in some class probability."""
    mine = class_probabilities(ours, kind)
    theirs = class_probabilities(own.values, own.kind)
    where = f"the {own.library} model in {source}"
    if mine.shape != theirs.shape:
        raise InvalidInputError(
            f"{where} must give as many class probabilities as its own {own.method}: the "
            f"audit reads {mine.shape[1]} per record on the first {mine.shape[0]} records. "
            f"Found {theirs.shape[1] if theirs.ndim == 2 else 1} from {own.method}."
        )
    with np.errstate(invalid="ignore"):
        gaps = np.abs(mine - theirs)
    gaps[np.isnan(mine) != np.isnan(theirs)] = np.inf
    gaps[np.isnan(gaps)] = 0.0  # NaN on both sides is refused where the losses are computed
    worst = float(gaps.max())
    if worst <= own.tolerance:
        return
    row, column = (int(i) for i in np.unravel_index(int(np.argmax(gaps)), gaps.shape))
    raise InvalidInputError(
        f"{where} must be scored as its own {own.method} scores it, but on the first "
        f"{mine.shape[0]} records the audit's probabilities differ from it by up to "
        f"{worst:.3g} (record {row}, class {column}: {mine[row, column]:.6g} against "
        f"{theirs[row, column]:.6g}; allowed {own.tolerance:g}), so the losses would be "
        f"wrong; please report this with the model. Found a difference of {worst:.3g}."
    )
