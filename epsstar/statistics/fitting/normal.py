"""The Normal fit of the parametric Epsilon* of Negoescu et al. 2024 (§3.1).

The paper is "Epsilon*: Privacy Metric for Machine Learning Models".
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from epsstar.exceptions import DegenerateDataError
from epsstar.plumbing.records.json_records import JsonRecord
from epsstar.statistics._validation import FloatArray, finite_vector

__all__ = ["NormalFit"]


@dataclass(frozen=True, slots=True)
class NormalFit(JsonRecord):
    """``N(mean, sd**2)``; fitted by maximum likelihood (``sd`` uses ``1/n``).

    Tails use ``log_ndtr`` and ``ndtri`` with the symmetry ``SF(x) = CDF(2m - x)``,
    so they stay accurate far beyond where ``1 - CDF`` would round to 0.
    """

    family: str = field(default="normal", kw_only=True)
    mean: float
    sd: float

    def __post_init__(self) -> None:
        if not (np.isfinite(self.mean) and np.isfinite(self.sd) and self.sd > 0):
            raise DegenerateDataError(
                f"a Normal fit needs a finite mean and a positive sd. Found mean={self.mean}, "
                f"sd={self.sd}."
            )

    @classmethod
    def fit(cls, values: ArrayLike) -> NormalFit:
        data = finite_vector("values", values, min_size=2)
        sd = float(np.std(data))
        if not sd > 0:
            raise DegenerateDataError(
                f"cannot fit a Normal to values that are all equal. Found every value = {data[0]}."
            )
        return cls(mean=float(np.mean(data)), sd=sd)

    def _z(self, x: ArrayLike) -> FloatArray:
        return (np.asarray(x, dtype=np.float64) - self.mean) / self.sd

    def cdf(self, x: ArrayLike) -> FloatArray:
        return np.asarray(special.ndtr(self._z(x)), dtype=np.float64)

    def sf(self, x: ArrayLike) -> FloatArray:
        return np.asarray(special.ndtr(-self._z(x)), dtype=np.float64)

    def logcdf(self, x: ArrayLike) -> FloatArray:
        return np.asarray(special.log_ndtr(self._z(x)), dtype=np.float64)

    def logsf(self, x: ArrayLike) -> FloatArray:
        return np.asarray(special.log_ndtr(-self._z(x)), dtype=np.float64)

    def ppf(self, q: ArrayLike) -> FloatArray:
        z = special.ndtri(np.asarray(q, dtype=np.float64))
        return np.asarray(self.mean + self.sd * z, dtype=np.float64)

    def isf(self, q: ArrayLike) -> FloatArray:
        z = special.ndtri(np.asarray(q, dtype=np.float64))
        return np.asarray(self.mean - self.sd * z, dtype=np.float64)

    def sample(self, size: int, rng: np.random.Generator) -> FloatArray:
        return rng.normal(self.mean, self.sd, size=size)
