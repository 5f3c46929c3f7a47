"""The μ-GDP curve that a claimed (ε, δ) names.

A trainer that claims (ε, δ)-DP and adds Gaussian noise is read, as in jax_privacy's one-run
f-DP audit and in Mahloujifar, Melis & Chaudhuri 2024 ("Auditing f-Differential Privacy in
One Run"), as claiming the μ-GDP curve that passes through (ε, δ): the μ with δ_μ(ε) = δ,
where δ_μ is :func:`~epsstar.statistics.readings.conversions.gdp_delta` (Dong, Roth & Su 2022,
"Gaussian Differential Privacy", Prop. 2.12). It is the inverse in μ of
:func:`~epsstar.statistics.readings.conversions.gdp_epsilon`, and 1/μ is the noise multiplier
of the Gaussian mechanism calibrated exactly to (ε, δ) (Balle & Wang's analytic Gaussian
mechanism, dp_accounting's ``get_sigma_gaussian``).
"""

from __future__ import annotations

import math

from scipy.optimize import brentq

from epsstar.statistics._validation import check_in_range
from epsstar.statistics.auditing._checks import check_claimed_epsilon
from epsstar.statistics.readings.conversions import gdp_delta

__all__ = ["claimed_mu"]


def claimed_mu(epsilon: float, delta: float) -> float:
    """The μ whose μ-GDP curve gives δ_μ(ε) = δ, for ε ≥ 0 and δ in (0, 1).

    δ_μ(ε) increases from 0 (μ → 0) to 1 (μ → ∞), so the root is unique; Brent's method
    solves log δ_μ(ε) = log δ, to a relative 1e-13, after a bracket is halved or doubled
    from μ = 1.
    """
    eps = check_claimed_epsilon(epsilon)
    d = check_in_range("delta", delta, 0.0, 1.0)
    target = math.log(d)

    def excess(mu: float) -> float:
        value = gdp_delta(eps, mu)
        # log 0 would stop Brent's method; any number below log(smallest float) serves.
        return (math.log(value) if value > 0.0 else -1e6) - target

    high = 1.0
    while excess(high) <= 0.0:
        high *= 2.0
    low = high / 2.0
    while excess(low) >= 0.0:
        low /= 2.0
    return float(brentq(excess, low, high, xtol=1e-300, rtol=1e-13, maxiter=500))
