"""The parametric supremum of eq. 7 against independent oracles."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from epsstar.statistics.estimators.crossfit import ratio_maximisers
from epsstar.statistics.estimators.optimizer import grid_supremum, parametric_supremum
from epsstar.statistics.fitting import GaussianMixtureFit, NormalFit, Reflected

mpmath.mp.dps = 40


def gdp_epsilon_mpmath(mu: float, delta: float) -> float:
    """ε solving δ = Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2), the μ-GDP → (ε, δ) conversion, in mpmath."""
    m = mpmath.mpf(mu)

    def excess(eps: mpmath.mpf) -> mpmath.mpf:
        return (
            mpmath.ncdf(-eps / m + m / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / m - m / 2) - delta
        )

    if excess(mpmath.mpf(0)) <= 0:
        return 0.0
    low, high = mpmath.mpf(0), mpmath.mpf(1)
    while excess(high) > 0:
        high *= 2
    for _ in range(90):  # plain bisection: excess() decreases in ε
        middle = (low + high) / 2
        low, high = (middle, high) if excess(middle) > 0 else (low, middle)
    return float((low + high) / 2)


@given(
    mu=st.floats(0.2, 3.0),
    sd=st.floats(0.1, 10.0),
    shift=st.floats(-50.0, 50.0),
    delta=st.sampled_from([1e-2, 3e-3, 1e-3, 1e-4]),
)
def test_equal_variance_normals_match_gdp_conversion(
    mu: float, sd: float, shift: float, delta: float
) -> None:
    # Training losses lower than population losses, equal variances: a μ-GDP trade-off.
    train, population = NormalFit(shift, sd), NormalFit(shift + mu * sd, sd)
    found = parametric_supremum(train, population, delta)
    interior = (
        min(found.fpr, found.fnr) > delta * (1 + 1e-6) and max(found.fpr, found.fnr) < 1 - delta
    )
    if not interior:
        # The maximising test sits on the boundary of the admissible rates (δ, 1 - δ),
        # where the restricted supremum may only fall below the unrestricted conversion.
        assert found.epsilon <= gdp_epsilon_mpmath(mu, delta) + 1e-9
        return
    assert found.epsilon == pytest.approx(gdp_epsilon_mpmath(mu, delta), abs=1e-3)


def test_gdp_oracle_is_exercised_in_the_interior() -> None:
    # Small μ puts the maximising test well inside (δ, 1 - δ).
    found = parametric_supremum(NormalFit(0, 1), NormalFit(0.5, 1), 1e-3)
    assert found.fpr > 1.5e-3
    assert found.epsilon == pytest.approx(gdp_epsilon_mpmath(0.5, 1e-3), abs=1e-6)


@pytest.mark.parametrize(
    ("train", "population", "delta", "points"),
    [
        (NormalFit(0, 1), NormalFit(1, 1), 1e-5, 1_000_000),
        (NormalFit(0, 1), NormalFit(3, 2), 1e-5, 1_000_000),
        (NormalFit(0, 2), NormalFit(0.5, 1), 1e-3, 1_000_000),
        (NormalFit(2, 0.3), NormalFit(0, 1), 1e-4, 1_000_000),
        # Quantiles of mixtures and Gammas are slow to invert: a coarser grid, same claim.
        pytest.param(
            GaussianMixtureFit((0.7, 0.3), (0.0, 2.0), (1.0, 0.5)),
            GaussianMixtureFit((0.5, 0.5), (1.0, 3.0), (1.0, 0.7)),
            1e-5,
            20_000,
            marks=pytest.mark.slow,
        ),
        (stats.gamma(2, scale=5), stats.gamma(4, scale=5), 1e-5, 100_000),
    ],
)
def test_never_below_the_papers_grid(train, population, delta, points) -> None:  # type: ignore[no-untyped-def]
    refined = parametric_supremum(train, population, delta)
    grid = grid_supremum(train, population, delta, points_per_distribution=points)
    assert refined.epsilon >= grid.epsilon - 1e-9
    # ... and it is a real value of eq. 7, not an overshoot: the grid gets close to it.
    assert refined.epsilon - grid.epsilon < 1e-3


@given(
    mu_small=st.floats(0.0, 3.0),
    extra=st.floats(0.01, 3.0),
    delta=st.sampled_from([1e-6, 1e-5, 1e-3]),
)
def test_grows_with_separation(mu_small: float, extra: float, delta: float) -> None:
    near = parametric_supremum(NormalFit(0, 1), NormalFit(mu_small, 1), delta).epsilon
    far = parametric_supremum(NormalFit(0, 1), NormalFit(mu_small + extra, 1), delta).epsilon
    assert far >= near - 1e-9


@given(mu=st.floats(-3, 3), ratio=st.floats(0.3, 3.0), delta=st.sampled_from([1e-5, 1e-3]))
def test_swapping_roles_gives_the_same_epsilon_with_mirrored_terms(
    mu: float, ratio: float, delta: float
) -> None:
    a, b = NormalFit(0, 1), NormalFit(mu, ratio)
    forward = parametric_supremum(a, b, delta)
    backward = parametric_supremum(b, a, delta)
    assert backward.epsilon == pytest.approx(forward.epsilon, abs=1e-7)
    # Swapping maps FPR ↔ 1 - FNR, so the four ratios are permuted (1 ↔ 4, 2 ↔ 3): each
    # ratio's own maximum reappears under its mirrored number (which one attains the
    # supremum is not compared: symmetric laws tie two of them).
    mirrored = {1: 4, 2: 3, 3: 2, 4: 1}
    swapped = {found.term: found.epsilon for found in ratio_maximisers(b, a, delta)}
    for found in ratio_maximisers(a, b, delta):
        assert swapped[mirrored[found.term]] == pytest.approx(found.epsilon, abs=1e-7)


def test_identical_distributions_give_zero() -> None:
    found = parametric_supremum(NormalFit(1, 2), NormalFit(1, 2), 1e-5)
    assert found.epsilon == 0.0
    assert found.term == 0


def test_reflection_reverses_the_order() -> None:
    base = NormalFit(1.0, 2.0)
    reflected = Reflected(base)
    x = np.linspace(-5, 5, 11)
    np.testing.assert_allclose(np.exp(reflected.logcdf(x)), stats.norm(-1, 2).cdf(x), rtol=1e-12)
    np.testing.assert_allclose(
        reflected.ppf([0.1, 0.5, 0.9]), stats.norm(-1, 2).ppf([0.1, 0.5, 0.9])
    )


def test_disjoint_distributions_give_the_ratio_at_the_edge() -> None:
    # No threshold keeps both rates above δ, but every test between the two laws has FNR 0:
    # at FPR → δ the first ratio is (1 − δ − 0)/δ, a bound (ε, δ)-DP must meet.
    found = parametric_supremum(NormalFit(0, 1), NormalFit(1000, 1), 0.4)
    assert found.epsilon == pytest.approx(np.log(0.6 / 0.4), rel=1e-9)
    assert found.term == 1
    assert found.fpr == pytest.approx(0.4, rel=1e-9)
