"""What a fitted (or known) distribution must offer, and two views of one.

The optimiser only needs CDF and survival function on the log scale and their
inverses; ``scipy.stats`` frozen distributions satisfy the same protocol, which
is how the true Epsilon* of a simulation is computed with the same code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike

from epsstar.plumbing.records.json_types import JsonObject
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.transform import LossTransform

__all__ = ["ContinuousDistribution", "FittedDistribution", "LossDistribution", "Reflected"]


@runtime_checkable
class ContinuousDistribution(Protocol):
    """A continuous distribution on the real line with a strictly increasing CDF."""

    def logcdf(self, x: Any, /) -> Any: ...

    def logsf(self, x: Any, /) -> Any: ...

    def ppf(self, q: Any, /) -> Any: ...

    def isf(self, q: Any, /) -> Any: ...


class FittedDistribution(ContinuousDistribution, Protocol):
    """A distribution fitted to transformed losses; also samples and describes itself."""

    @property
    def family(self) -> str: ...

    def cdf(self, x: Any, /) -> Any: ...

    def sf(self, x: Any, /) -> Any: ...

    def sample(self, size: int, rng: np.random.Generator) -> FloatArray: ...

    def to_dict(self) -> JsonObject: ...


@dataclass(frozen=True, slots=True)
class Reflected:
    """The distribution of ``-X``: ``P(-X <= x) = P(X >= -x)``.

    The transform ``phi`` decreases with the loss; reflecting it gives a
    variable ordered like the loss, for which the membership test rejects
    ``H0`` below a threshold.
    """

    base: ContinuousDistribution

    def logcdf(self, x: ArrayLike) -> FloatArray:
        return np.asarray(self.base.logsf(-np.asarray(x, dtype=np.float64)), dtype=np.float64)

    def logsf(self, x: ArrayLike) -> FloatArray:
        return np.asarray(self.base.logcdf(-np.asarray(x, dtype=np.float64)), dtype=np.float64)

    def ppf(self, q: ArrayLike) -> FloatArray:
        return -np.asarray(self.base.isf(q), dtype=np.float64)

    def isf(self, q: ArrayLike) -> FloatArray:
        return -np.asarray(self.base.ppf(q), dtype=np.float64)


@dataclass(frozen=True, slots=True)
class LossDistribution:
    """A distribution fitted to ``phi``, seen in loss units.

    ``P(L <= l) = P(phi >= phi(l))`` because the transform is decreasing.
    """

    fit: FittedDistribution
    transform: LossTransform

    def cdf(self, loss: ArrayLike) -> FloatArray:
        return np.asarray(self.fit.sf(self.transform.forward(loss)), dtype=np.float64)

    def sf(self, loss: ArrayLike) -> FloatArray:
        return np.asarray(self.fit.cdf(self.transform.forward(loss)), dtype=np.float64)

    def logcdf(self, loss: ArrayLike) -> FloatArray:
        return np.asarray(self.fit.logsf(self.transform.forward(loss)), dtype=np.float64)

    def logsf(self, loss: ArrayLike) -> FloatArray:
        return np.asarray(self.fit.logcdf(self.transform.forward(loss)), dtype=np.float64)

    def ppf(self, q: ArrayLike) -> FloatArray:
        return self.transform.inverse(self.fit.isf(q))

    def isf(self, q: ArrayLike) -> FloatArray:
        return self.transform.inverse(self.fit.ppf(q))
