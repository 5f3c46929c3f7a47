"""The model's utility on one data set: accuracy and AUROC."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from epsstar.statistics.results import json_number

__all__ = ["Utility", "auroc"]


def auroc(
    labels: NDArray[np.integer[Any]], scores: NDArray[np.floating[Any]], n_classes: int
) -> tuple[float | None, str | None]:
    """Area under the ROC curve of ``scores`` for ``labels`` (class indices), and a note.

    Two classes: ``scores`` is one score per record for class 1. More: one column of
    class probabilities per class, averaged one-vs-rest (macro). ``None`` with the
    reason when the AUROC is undefined (one class present, or a class missing).
    """
    from sklearn.metrics import roc_auc_score

    present = np.unique(labels)
    if present.size < 2:
        return None, "only one class present"
    if n_classes <= 2:
        return float(roc_auc_score(labels, scores)), None
    if present.size < n_classes:
        return None, "not every class is present"
    value = roc_auc_score(labels, scores, multi_class="ovr", labels=np.arange(n_classes))
    return float(value), "one-vs-rest, macro average"


@dataclass(frozen=True, slots=True)
class Utility:
    """Accuracy and AUROC of the model on one data set (AUROC None when undefined)."""

    n: int
    accuracy: float
    auroc: float | None
    auroc_note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "accuracy": self.accuracy,
            "auroc": json_number(self.auroc),
            "auroc_note": self.auroc_note,
        }
