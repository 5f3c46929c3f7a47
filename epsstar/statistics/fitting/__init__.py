"""Distributions fitted to transformed losses: a Normal and Gaussian mixtures."""

from epsstar.statistics.fitting.base import (
    ContinuousDistribution,
    FittedDistribution,
    LossDistribution,
    Reflected,
)
from epsstar.statistics.fitting.mixture import GaussianMixtureFit
from epsstar.statistics.fitting.normal import NormalFit

__all__ = [
    "ContinuousDistribution",
    "FittedDistribution",
    "GaussianMixtureFit",
    "LossDistribution",
    "NormalFit",
    "Reflected",
]
