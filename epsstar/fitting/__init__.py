"""Distributions fitted to transformed losses: a Normal and Gaussian mixtures."""

from epsstar.fitting.base import (
    ContinuousDistribution,
    FittedDistribution,
    LossDistribution,
    Reflected,
)
from epsstar.fitting.mixture import GaussianMixtureFit
from epsstar.fitting.normal import NormalFit

__all__ = [
    "ContinuousDistribution",
    "FittedDistribution",
    "GaussianMixtureFit",
    "LossDistribution",
    "NormalFit",
    "Reflected",
]
