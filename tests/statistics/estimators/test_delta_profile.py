"""Epsilon* as a function of δ: the grid, the points, and the audit's profile."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from epsstar.audit.attacks.from_losses import audit_losses
from epsstar.audit.options import AuditOptions
from epsstar.statistics.estimators.delta_profile import delta_grid, epsilon_by_delta
from epsstar.statistics.estimators.estimator import default_delta, epsilon_star
from epsstar.statistics.utility import Utility


@given(st.integers(3, 10**9), st.floats(1e-12, 0.49))
def test_the_grid_runs_from_ten_records_down_to_delta(n: int, delta: float) -> None:
    grid = delta_grid(delta, n)
    assert grid[-1] == delta
    top = min(10 / n, 0.1)
    if delta >= top:
        assert grid == (delta,)
        return
    assert grid[0] == pytest.approx(top)
    assert all(a > b for a, b in itertools.pairwise(grid))
    # Two points per decade: neighbours at most sqrt(10) apart.
    ratios = [a / b for a, b in itertools.pairwise(grid)]
    assert max(ratios) <= math.sqrt(10) * (1 + 1e-9)


def test_delta_zero_is_only_the_chosen_delta() -> None:
    assert delta_grid(0.0, 1000) == (0.0,)


def test_each_point_is_the_method_at_that_delta() -> None:
    rng = np.random.default_rng(4)
    train, population = rng.normal(0.0, 1.0, 3000), rng.normal(0.6, 1.0, 3000)
    delta = default_delta(train.size)
    grid = delta_grid(delta, train.size)
    points = epsilon_by_delta(
        [epsilon_star(train, population, delta=d, method="tails") for d in grid]
    )
    assert [p.delta for p in points] == list(delta_grid(delta, train.size))
    for point in points:
        direct = epsilon_star(train, population, delta=point.delta, method="tails")
        assert point.epsilon == direct.epsilon
        assert point.unsupported_rates == direct.unsupported_rates
    # A smaller delta admits more tests: the plug-in supremum cannot fall.
    values = [p.epsilon for p in points]
    assert values == sorted(values)
    # At 10/n every rate is held by the data.
    assert points[0].supported


@pytest.mark.filterwarnings("ignore::epsstar.exceptions.PoorFitWarning")
@pytest.mark.parametrize("method", ["tails", "tails-crossfit", "parametric", "empirical"])
def test_fitting_once_for_every_delta_equals_separate_estimates(method: str) -> None:
    from epsstar.statistics.estimators.estimator import estimate_at_deltas
    from epsstar.statistics.estimators.methods import method_config

    rng = np.random.default_rng(6)
    train, population = rng.gamma(2, 5, 1500), rng.gamma(2.8, 5, 1500)
    grid = delta_grid(default_delta(train.size), train.size)
    together = estimate_at_deltas(train, population, method_config(method), grid, seed=3)  # type: ignore[arg-type]
    for d, result in zip(grid, together, strict=True):
        alone = epsilon_star(train, population, delta=d, method=method, seed=3)  # type: ignore[arg-type]
        assert result.to_dict() == alone.to_dict()


def test_the_audit_profile_ends_at_the_headline() -> None:
    rng = np.random.default_rng(1)
    train, population = rng.gamma(2, 5, 2000), rng.gamma(2.6, 5, 2000)
    utility = {"population": Utility(accuracy=0.5, auroc=None, n=10)}
    result = audit_losses(train, population, utility=utility, options=AuditOptions(seed=2))
    profile = result.delta_profile
    assert len(profile) >= 4
    assert profile[-1].delta == result.delta
    assert profile[-1].epsilon == result.epsilon_star
    payload = result.to_dict()["epsilon_star_by_delta"]
    assert payload[-1]["epsilon_star"] == result.epsilon_star
    assert payload[0]["supported"] is True
