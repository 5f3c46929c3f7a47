"""The loss transform of the parametric Epsilon* estimator.

Appendix B of Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models"
(steps 1-4):

1. normalise with the pooled minimum and maximum, ``x = (l - min) / (max - min)``;
2. shift away from 0, ``x + alpha`` (``alpha = 1``);
3. ``p = exp(-(x + alpha))``;
4. ``phi = log p - log(1 - p)``.

So ``phi = -(x + alpha) - log(1 - exp(-(x + alpha)))``, a smooth strictly
*decreasing* map of the loss: a low loss (a likely training member) has a high
``phi``. Its inverse is ``x + alpha = log(1 + exp(-phi))``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from epsstar.exceptions import DegenerateDataError
from epsstar.plumbing.records.json_records import JsonRecord
from epsstar.statistics._validation import FloatArray, check_in_range

__all__ = ["LossTransform"]


@dataclass(frozen=True, slots=True)
class LossTransform(JsonRecord):
    """The map ``loss -> phi`` fixed by the pooled range of the two loss sets."""

    loss_min: float
    loss_max: float
    alpha: float = 1.0

    def __post_init__(self) -> None:
        check_in_range("alpha", self.alpha, 0.0, float("inf"))
        if not (np.isfinite(self.loss_min) and np.isfinite(self.loss_max)):
            raise DegenerateDataError(
                f"loss range must be finite. Found [{self.loss_min}, {self.loss_max}]."
            )
        if not self.loss_max > self.loss_min:
            raise DegenerateDataError(
                "all losses are equal, so no distribution can be fitted to them; a membership "
                "test on them has FPR = 1 - FNR and Epsilon* = 0. "
                f"Found every loss = {self.loss_min}."
            )

    @classmethod
    def from_losses(cls, *loss_sets: FloatArray, alpha: float = 1.0) -> LossTransform:
        """The transform whose normalisation uses the pooled min and max of ``loss_sets``."""
        low = min(float(np.min(losses)) for losses in loss_sets)
        high = max(float(np.max(losses)) for losses in loss_sets)
        return cls(loss_min=low, loss_max=high, alpha=alpha)

    @property
    def scale(self) -> float:
        return self.loss_max - self.loss_min

    def forward(self, losses: ArrayLike) -> FloatArray:
        """``phi`` for each loss (decreasing in the loss)."""
        shifted = (np.asarray(losses, dtype=np.float64) - self.loss_min) / self.scale + self.alpha
        # log p = -shifted and log(1 - p) = log(-expm1(-shifted)), both accurate near p = 1.
        with np.errstate(divide="ignore"):
            result: FloatArray = -shifted - np.log(-np.expm1(-shifted))
        return result

    def inverse(self, phi: ArrayLike) -> FloatArray:
        """The loss whose transform is ``phi``."""
        shifted = np.logaddexp(0.0, -np.asarray(phi, dtype=np.float64))
        result: FloatArray = (shifted - self.alpha) * self.scale + self.loss_min
        return result
