"""FNR/FPR trade-off curves of the loss-threshold membership test.

The test rejects H0 ("not a member") when the loss is ≤ τ, so
``FPR(τ) = P_pop(L ≤ τ)`` and ``FNR(τ) = P_train(L > τ)`` (eqs. 5-6 of
Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models"). Empirical curves step
through every distinct observed loss; parametric curves evaluate fitted CDFs at quantiles of both
distributions spaced geometrically towards both tails, which is where Epsilon* lives.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from epsstar.plumbing.records.json_records import JsonRecord
from epsstar.statistics._validation import (
    FloatArray,
    check_in_range,
    check_positive_int,
    finite_vector,
)
from epsstar.statistics.estimators.empirical import empirical_rates
from epsstar.statistics.fitting.base import ContinuousDistribution

__all__ = ["TradeoffCurve", "empirical_curve", "parametric_curve"]


@dataclass(frozen=True, slots=True)
class TradeoffCurve(JsonRecord):
    """FPR and FNR at ascending thresholds (in the units the distributions use)."""

    thresholds: FloatArray
    fpr: FloatArray
    fnr: FloatArray

    def __len__(self) -> int:
        return int(self.thresholds.size)


def empirical_curve(train_losses: ArrayLike, population_losses: ArrayLike) -> TradeoffCurve:
    """Rates at every distinct observed loss."""
    thresholds, fpr, fnr = empirical_rates(
        finite_vector("train_losses", train_losses),
        finite_vector("population_losses", population_losses),
    )
    return TradeoffCurve(thresholds=thresholds, fpr=fpr, fnr=fnr)


def parametric_curve(
    train: ContinuousDistribution,
    population: ContinuousDistribution,
    *,
    points_per_tail: int = 200,
    smallest_rate: float = 1e-12,
) -> TradeoffCurve:
    """Rates of two fitted distributions at quantiles reaching ``smallest_rate`` in each tail."""
    n = check_positive_int("points_per_tail", points_per_tail, minimum=2)
    smallest = check_in_range("smallest_rate", smallest_rate, 0.0, 0.5)
    tail = np.geomspace(smallest, 0.5, n)
    thresholds = np.concatenate(
        [population.ppf(tail), population.isf(tail), train.ppf(tail), train.isf(tail)]
    )
    thresholds = np.unique(thresholds[np.isfinite(thresholds)])
    fpr = np.exp(np.asarray(population.logcdf(thresholds), dtype=np.float64))
    fnr = np.exp(np.asarray(train.logsf(thresholds), dtype=np.float64))
    return TradeoffCurve(thresholds=thresholds, fpr=fpr, fnr=fnr)
