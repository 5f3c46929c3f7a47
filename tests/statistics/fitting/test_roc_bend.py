"""The bend of a slope-1 binormal ROC curve in its tails."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from epsstar.statistics.fitting import roc_bend
from epsstar.statistics.fitting.roc_bend import BEND_ERRORS, TailBend, tail_bend


@pytest.mark.parametrize("share", [0.05, 0.25, 0.5])
def test_the_truncated_variance_is_scipys(share: float) -> None:
    cut = stats.norm.ppf(share)
    assert roc_bend._truncated_variance(share) == pytest.approx(
        stats.truncnorm(-np.inf, cut).var(), rel=1e-12
    )


def test_gaussian_mechanism_draws_read_straight_with_unit_spread() -> None:
    rng = np.random.default_rng(0)
    found = [tail_bend(rng.normal(0.0, 1.0, 5000), rng.normal(0.5, 1.0, 5000)) for _ in range(24)]
    scores = np.array([(bend.lower, bend.upper) for bend in found])
    # One-sided at 2.5 standard errors: about 1 % of ends; 2 of 24 draws allows chance.
    assert sum(not bend.straight for bend in found) <= 2
    # The standard error is the difference's: its spread over draws is near 1 (0.7-1.4
    # allows the sampling error of 48 values' standard deviation).
    assert 0.7 < float(np.std(scores)) < 1.4
    assert abs(float(np.mean(scores))) < 0.5


@pytest.mark.parametrize(
    "law",
    [stats.t(3), stats.laplace()],
    ids=["student t3", "laplace"],
)
def test_shifts_of_heavy_tailed_laws_bend_at_both_ends(law: stats.rv_continuous) -> None:
    rng = np.random.default_rng(1)
    bend = tail_bend(law.rvs(10_000, random_state=rng), law.rvs(10_000, random_state=rng) + 0.5)
    assert bend.lower < -BEND_ERRORS
    assert bend.upper < -BEND_ERRORS
    assert not bend.straight


def test_only_a_bend_towards_the_diagonal_counts() -> None:
    assert TailBend(5.0, 0.0).straight
    assert TailBend(-2.4, 3.0).straight
    assert not TailBend(0.0, -2.6).straight
    assert TailBend(-0.31, 1.05).describe() == (
        "outer-quarter shift -0.3 (lower end) and +1.1 (upper end) standard errors from the half's"
    )
