"""Bootstrap intervals for Epsilon*."""

from __future__ import annotations

import json
from typing import Literal

import numpy as np
import pytest

from epsstar import epsilon_star
from epsstar.exceptions import InvalidInputError
from epsstar.statistics.estimators.bootstrap import bootstrap_replicates, interval_from_replicates
from epsstar.statistics.estimators.methods import Bootstrap


def test_interval_kinds() -> None:
    replicates = np.linspace(1.0, 3.0, 101)
    percentile = interval_from_replicates(2.5, replicates, level=0.9, kind="percentile")
    assert (percentile.low, percentile.high) == pytest.approx((1.1, 2.9))
    basic = interval_from_replicates(2.5, replicates, level=0.9, kind="basic")
    assert (basic.low, basic.high) == pytest.approx((2.1, 3.9))
    assert interval_from_replicates(0.1, replicates, level=0.9, kind="basic").low == 0.0
    with pytest.raises(InvalidInputError, match="Found 'bca'"):
        interval_from_replicates(1.0, replicates, level=0.9, kind="bca")  # type: ignore[arg-type]


def test_replicates_are_reproducible_and_resample_both_sides() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=100), rng.normal(size=50)
    first = bootstrap_replicates(a, b, lambda x, y: x.mean() - y.mean(), n_bootstrap=20, seed=3)
    again = bootstrap_replicates(a, b, lambda x, y: x.mean() - y.mean(), n_bootstrap=20, seed=3)
    np.testing.assert_array_equal(first, again)
    assert np.std(first) > 0
    # Each side is resampled, at its own size.
    sizes = bootstrap_replicates(a, b, lambda x, y: 1000.0 * x.size + y.size, n_bootstrap=5)
    np.testing.assert_array_equal(sizes, 100_050.0)
    for side in (lambda x, y: x.mean(), lambda x, y: y.mean()):
        assert np.std(bootstrap_replicates(a, b, side, n_bootstrap=20, seed=3)) > 0


@pytest.mark.parametrize("method", ["tails", "empirical"])
def test_epsilon_star_interval_in_the_result(method: Literal["tails", "empirical"]) -> None:
    rng = np.random.default_rng(1)
    train, population = rng.gamma(2.0, 5.0, 2000), rng.gamma(4.0, 5.0, 2000)
    result = epsilon_star(
        train, population, delta=1e-3, method=method, interval=Bootstrap(0.9, n_bootstrap=40)
    )
    assert result.interval is not None
    assert result.interval.low <= result.epsilon <= result.interval.high
    payload = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert payload["epsilon_star_interval"]["level"] == 0.9
    assert payload["epsilon_star_interval"]["n_bootstrap"] == 40


def test_no_interval_by_default() -> None:
    rng = np.random.default_rng(2)
    result = epsilon_star(rng.normal(size=200), rng.normal(size=200), delta=1e-3, method="tails")
    assert result.interval is None
    assert result.to_dict()["epsilon_star_interval"] is None


def test_bad_interval_level() -> None:
    with pytest.raises(InvalidInputError, match="interval"):
        epsilon_star(np.arange(100.0), np.arange(100.0), delta=1e-3, interval=1.5)


def test_tails_replicates_draw_the_tail_size_unless_it_is_fixed() -> None:
    from epsstar.statistics.estimators.estimator import TAIL_SCALE_LOW, _tail_scales
    from epsstar.statistics.estimators.methods import Empirical, TailsCrossfit, TailsTested

    drawn = _tail_scales(TailsTested(), 500, seed=1)
    assert np.all((drawn >= TAIL_SCALE_LOW) & (drawn <= 1.0))
    # log-uniform: about half the draws below the geometric middle of the range
    assert 0.4 < np.mean(drawn < np.sqrt(TAIL_SCALE_LOW)) < 0.6
    np.testing.assert_array_equal(drawn, _tail_scales(TailsTested(), 500, seed=1))
    assert np.all(_tail_scales(TailsCrossfit(tail_size=30), 20, seed=1) == 1.0)
    assert np.all(_tail_scales(Empirical(), 20, seed=1) == 1.0)
