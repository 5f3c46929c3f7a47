"""Gaussian-mixture fits (Appendix 8.2 of the Epsilon* paper uses 1-20 components).

The paper is Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models".

The mixture is fitted with scikit-learn's EM. The number of components is
chosen by the Bayesian information criterion, scanning ``k = 1, 2, ...`` up to
``max_components`` and stopping once BIC has failed to improve for
``patience`` consecutive ``k`` (BIC over ``k`` is close to unimodal for 1-D
data, and each extra fit costs more than the last).

CDF and survival function are ``logsumexp`` over components of
``log w_k + log_ndtr(±z_k)``, so tails stay accurate on the log scale. No
closed-form quantile exists; :meth:`GaussianMixtureFit.ppf` solves
``CDF(x) = q`` by vectorised bisection on the log scale (SF for the upper half),
which is exact to machine precision of the bracket in 80 halvings.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from epsstar.exceptions import DegenerateDataError, FitError
from epsstar.plumbing.records.json_records import JsonRecord, json_property
from epsstar.statistics._validation import FloatArray, check_positive_int, finite_vector

__all__ = ["GaussianMixtureFit"]

_BISECTION_STEPS = 80


def _column(values: ArrayLike) -> FloatArray:
    """Finite values with some spread, as the (n, 1) matrix scikit-learn expects."""
    data = finite_vector("values", values, min_size=2)
    if not np.ptp(data) > 0:
        raise DegenerateDataError(
            f"cannot fit a mixture to values that are all equal. Found every value = {data[0]}."
        )
    return data.reshape(-1, 1)


@dataclass(frozen=True, slots=True)
class GaussianMixtureFit(JsonRecord):
    """``sum_k w_k N(m_k, s_k**2)`` with the chosen number of components."""

    family: str = field(default="gmm", kw_only=True)
    weights: tuple[float, ...]
    means: tuple[float, ...]
    sds: tuple[float, ...]
    bic: float = float("nan")

    def __post_init__(self) -> None:
        k = len(self.weights)
        if k == 0 or len(self.means) != k or len(self.sds) != k:
            raise FitError(
                f"a mixture needs equally many weights, means and sds. Found "
                f"{len(self.weights)}, {len(self.means)}, {len(self.sds)}."
            )
        if min(self.sds) <= 0 or min(self.weights) <= 0:
            raise FitError(
                f"mixture sds and weights must be positive. Found {self.sds}, {self.weights}."
            )

    @json_property(after="family")
    def n_components(self) -> int:
        return len(self.weights)

    @classmethod
    def fit(
        cls,
        values: ArrayLike,
        *,
        max_components: int = 20,
        patience: int = 2,
        seed: int = 0,
    ) -> GaussianMixtureFit:
        """Fit mixtures with 1..max_components components and keep the lowest BIC."""
        max_components = check_positive_int("max_components", max_components)
        patience = check_positive_int("patience", patience)
        data = _column(values)
        # A component needs a few points; never try more components than the data support.
        max_components = min(max_components, max(1, data.shape[0] // 10))
        best: GaussianMixtureFit | None = None
        misses = 0
        for k in range(1, max_components + 1):
            candidate = cls._fit_checked(data, k, seed)
            if best is None or candidate.bic < best.bic:
                best, misses = candidate, 0
            else:
                misses += 1
                if misses >= patience:
                    break
        assert best is not None
        return best

    @classmethod
    def fit_components(
        cls, values: ArrayLike, n_components: int, *, seed: int = 0
    ) -> GaussianMixtureFit:
        """Fit a mixture with exactly ``n_components`` components."""
        n_components = check_positive_int("n_components", n_components)
        data = _column(values)
        return cls._fit_checked(data, n_components, seed)

    @classmethod
    def _fit_checked(cls, data: FloatArray, n_components: int, seed: int) -> GaussianMixtureFit:
        from sklearn.mixture import GaussianMixture

        model = GaussianMixture(
            n_components=n_components, covariance_type="full", random_state=seed
        )
        model.fit(data)
        return cls(
            weights=tuple(float(w) for w in model.weights_),
            means=tuple(float(m) for m in model.means_[:, 0]),
            sds=tuple(float(np.sqrt(c)) for c in model.covariances_[:, 0, 0]),
            bic=float(model.bic(data)),
        )

    def _arrays(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        return (
            np.log(np.asarray(self.weights)),
            np.asarray(self.means),
            np.asarray(self.sds),
        )

    def _log_mixture(self, x: ArrayLike, upper: bool) -> FloatArray:
        log_w, means, sds = self._arrays()
        points = np.asarray(x, dtype=np.float64)
        z = (points[..., None] - means) / sds
        terms = log_w + special.log_ndtr(-z if upper else z)
        return np.asarray(special.logsumexp(terms, axis=-1), dtype=np.float64)

    def logcdf(self, x: ArrayLike) -> FloatArray:
        return self._log_mixture(x, upper=False)

    def logsf(self, x: ArrayLike) -> FloatArray:
        return self._log_mixture(x, upper=True)

    def cdf(self, x: ArrayLike) -> FloatArray:
        return np.exp(self.logcdf(x))

    def sf(self, x: ArrayLike) -> FloatArray:
        return np.exp(self.logsf(x))

    def _solve(self, log_target: FloatArray, upper: bool) -> FloatArray:
        """x with logcdf(x) = log_target (or logsf(x) = log_target when ``upper``)."""
        _, means, sds = self._arrays()
        span = 40.0 * float(sds.max())
        low = np.full(log_target.shape, float(means.min()) - span)
        high = np.full(log_target.shape, float(means.max()) + span)
        for _ in range(_BISECTION_STEPS):
            middle = 0.5 * (low + high)
            value = self._log_mixture(middle, upper)
            # logcdf increases with x, logsf decreases.
            go_right = value < log_target if not upper else value > log_target
            low = np.where(go_right, middle, low)
            high = np.where(go_right, high, middle)
        result: FloatArray = 0.5 * (low + high)
        return result

    def ppf(self, q: ArrayLike) -> FloatArray:
        probs = np.asarray(q, dtype=np.float64)
        with np.errstate(divide="ignore"):
            lower = self._solve(np.log(np.minimum(probs, 0.5)), upper=False)
            upper = self._solve(np.log1p(-np.maximum(probs, 0.5)), upper=True)
        result = np.where(probs <= 0.5, lower, upper)
        result = np.where(probs <= 0, -np.inf, np.where(probs >= 1, np.inf, result))
        return np.where(np.isnan(probs), np.nan, result)

    def isf(self, q: ArrayLike) -> FloatArray:
        probs = np.asarray(q, dtype=np.float64)
        with np.errstate(divide="ignore"):
            upper = self._solve(np.log(np.minimum(probs, 0.5)), upper=True)
            lower = self._solve(np.log1p(-np.maximum(probs, 0.5)), upper=False)
        result = np.where(probs <= 0.5, upper, lower)
        result = np.where(probs <= 0, np.inf, np.where(probs >= 1, -np.inf, result))
        return np.where(np.isnan(probs), np.nan, result)

    def sample(self, size: int, rng: np.random.Generator) -> FloatArray:
        _, means, sds = self._arrays()
        weights = np.asarray(self.weights) / np.sum(self.weights)
        component = rng.choice(len(weights), size=size, p=weights)
        return rng.normal(means[component], sds[component])
