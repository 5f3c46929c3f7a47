"""Plain-language readings of Epsilon* for one model's losses.

The posterior-belief bound ρ_β = 1/(1+e^-ε) (Bernau et al. 2021, "Quantifying identifiability to
choose and audit ε in differentially private deep learning"), the membership advantage of the
loss-threshold attack (observed max TPR - FPR, and the bound (e^ε - 1 + 2δ)/(e^ε + 1) implied by
(ε*, δ)), and the attack's TPR at fixed low FPRs: observed, from the fitted distributions, and the
(ε*, δ) bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from epsstar.plumbing.records.json_records import JsonRecord, json_rule
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.fitting import LossDistribution
from epsstar.statistics.readings.conversions import (
    advantage_bound_dp,
    posterior_belief_bound,
    tpr_bound_dp,
)
from epsstar.statistics.results import EpsilonStarResult
from epsstar.statistics.summaries.loss_sketch import exact_counts
from epsstar.statistics.summaries.loss_summary import LossesLike, as_losses
from epsstar.statistics.summaries.protocols import Losses

__all__ = ["READING_FPRS", "Readings", "TprReading", "membership_readings"]

#: FPRs at which the readings report the loss attack's TPR.
READING_FPRS: tuple[float, ...] = (0.001, 0.01)


@dataclass(frozen=True, slots=True)
class TprReading(JsonRecord):
    """The loss attack's TPR at a fixed FPR: observed, from the fits, and the (ε*, δ) bound."""

    fpr: float
    tpr_observed: float
    tpr_fitted: float | None
    tpr_bound: float


@dataclass(frozen=True, slots=True)
class Readings(JsonRecord):
    """What Epsilon* means for a person whose record might be in the training set."""

    posterior_belief_bound: float
    advantage_observed: float = field(metadata=json_rule(name="membership_advantage_observed"))
    advantage_bound: float = field(metadata=json_rule(name="membership_advantage_bound"))
    tpr_at_fpr: tuple[TprReading, ...]


def _observed_tpr_at(level: float, fpr: FloatArray, tpr: FloatArray) -> float:
    """TPR of the largest loss threshold whose observed FPR is at most ``level`` (0 when
    every threshold's FPR is above it: the test calling nobody a member)."""
    within = fpr <= level
    return float(tpr[within].max()) if within.any() else 0.0


def _rates(train: Losses, population: Losses) -> tuple[FloatArray, FloatArray]:
    """FPR and TPR of the loss attack at every threshold where both sides' counts are
    exact: every observed loss, or, for summarised losses, each value their sketches hold
    and each grid edge (:func:`~epsstar.statistics.summaries.loss_sketch.exact_counts`)."""
    _, pop_below, train_below = exact_counts(train.whole, population.whole)
    return pop_below / population.n, train_below / train.n


def membership_readings(
    train_losses: LossesLike,
    population_losses: LossesLike,
    result: EpsilonStarResult,
) -> Readings:
    """The readings of ``result`` (module doc); observed rates at the thresholds of
    :func:`_rates` (for summarised losses, the grid's edges stand for the thresholds
    inside one bin of the body)."""
    fpr, tpr = _rates(
        as_losses(train_losses, "train_losses"), as_losses(population_losses, "population_losses")
    )
    advantage = float(max(0.0, np.max(tpr - fpr)))
    train_fit = pop_fit = None
    if result.transform is not None and result.fits:
        train_fit = LossDistribution(result.fits["train"].fit, result.transform)
        pop_fit = LossDistribution(result.fits["population"].fit, result.transform)
    readings = []
    for level in READING_FPRS:
        fitted = None
        if train_fit is not None and pop_fit is not None:
            fitted = float(train_fit.cdf(pop_fit.ppf(np.array([level])))[0])
        readings.append(
            TprReading(
                fpr=level,
                tpr_observed=_observed_tpr_at(level, fpr, tpr),
                tpr_fitted=fitted,
                tpr_bound=tpr_bound_dp(level, result.epsilon, result.delta),
            )
        )
    return Readings(
        posterior_belief_bound=posterior_belief_bound(result.epsilon),
        advantage_observed=advantage,
        advantage_bound=advantage_bound_dp(result.epsilon, result.delta),
        tpr_at_fpr=tuple(readings),
    )
