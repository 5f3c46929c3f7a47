"""The μ of a claimed (ε, δ), checked against the closed-form μ-GDP curve."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

from epsstar.statistics.auditing.claims import claimed_mu


@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 0.5), (0.5, 1e-5), (8.0, 1e-3)])
def test_claimed_mu_solves_the_gdp_curve(epsilon: float, delta: float) -> None:
    mu = claimed_mu(epsilon, delta)
    # Dong, Roth & Su, δ_μ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2); (1, 0.5) needs μ > 1
    curve = norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2)
    # 1e-9 relative: the root is solved to 1e-13; scipy's Φ differs in the last digits
    assert curve == pytest.approx(delta, rel=1e-9)
