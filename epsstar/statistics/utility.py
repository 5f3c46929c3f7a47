"""The model's utility on one data set: accuracy and AUROC."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from epsstar.statistics.results import json_number

__all__ = ["Utility"]


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
