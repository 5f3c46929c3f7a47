"""``tails-tested``: the cross-fitted estimate when the held-out leak test finds a leak, else 0."""

from __future__ import annotations

import numpy as np
import pytest

from epsstar.statistics.bounds.leak_test import held_out_leak_test
from epsstar.statistics.estimators.estimator import epsilon_star
from epsstar.statistics.estimators.methods import Bootstrap, TailsTested, method_config


def test_a_leak_keeps_the_cross_fitted_estimate() -> None:
    rng = np.random.default_rng(1)
    train, population = rng.gamma(2, 5, 2000), rng.gamma(3, 5, 2000)
    tested = epsilon_star(train, population, delta=1e-4, method="tails-tested", seed=4)
    crossfit = epsilon_star(train, population, delta=1e-4, method="tails-crossfit", seed=4)
    assert tested.leak_p_value is not None
    assert tested.leak_p_value < 1e-6
    assert tested.epsilon == crossfit.epsilon == tested.untested_epsilon
    assert (tested.fpr, tested.fnr, tested.attained_by) == (
        crossfit.fpr,
        crossfit.fnr,
        crossfit.attained_by,
    )
    assert tested.method == "tails-tested"


def test_no_leak_found_is_zero_and_says_what_the_estimate_was() -> None:
    rng = np.random.default_rng(2)
    for seed in range(20):
        train, population = rng.normal(0, 1, 1000), rng.normal(0, 1, 1000)
        tested = epsilon_star(train, population, delta=1e-4, method="tails-tested", seed=seed)
        p_value = held_out_leak_test(train, population, seed=seed).p_value
        assert tested.leak_p_value == p_value
        crossfit = epsilon_star(train, population, delta=1e-4, method="tails-crossfit", seed=seed)
        assert tested.untested_epsilon == crossfit.epsilon
        if p_value >= 0.05:
            assert tested.epsilon == 0.0
            assert np.isnan(tested.fpr)
            if crossfit.epsilon > 0:
                assert tested.note is not None
                assert f"{crossfit.epsilon:.4g}" in tested.note
        payload = tested.to_dict()
        assert payload["untested_epsilon_star"] == crossfit.epsilon
        assert payload["leak_p_value"] == p_value


def test_where_nothing_leaks_it_is_zero_in_most_runs() -> None:
    rng = np.random.default_rng(3)
    values = [
        epsilon_star(
            rng.gamma(2, 5, 600), rng.gamma(2, 5, 600), delta=1e-4, method="tails-tested", seed=s
        ).epsilon
        for s in range(60)
    ]
    assert np.mean(np.array(values) == 0.0) >= 0.85


def test_its_options_are_checked() -> None:
    assert method_config("tails-tested", n_splits=2) == TailsTested(n_splits=2)
    with pytest.raises(Exception, match="level"):
        TailsTested(level=1.5)


def test_its_interval_keeps_the_tests_decision() -> None:
    rng = np.random.default_rng(7)
    train, population = rng.normal(0, 1, 800), rng.normal(0, 1, 800)
    interval = Bootstrap(0.9, n_bootstrap=20)
    tested = epsilon_star(train, population, delta=1e-4, method="tails-tested", interval=interval)
    crossfit = epsilon_star(
        train, population, delta=1e-4, method="tails-crossfit", interval=interval
    )
    assert tested.interval is not None
    assert crossfit.interval is not None
    assert tested.epsilon == 0.0  # no leak found in these identical samples
    assert tested.interval.low == 0.0
    # The replicates are the cross-fitted estimate's, on the same resamples.
    assert tested.interval.high == crossfit.interval.high
    assert tested.interval.replicate_mean == crossfit.interval.replicate_mean


def test_without_the_untested_estimate_epsilon_is_the_same() -> None:
    """``untested=False`` (the blind baseline's reading) gives the same Epsilon* and leak
    test whether or not a leak is found, and skips only the untested figure when none is."""
    from epsstar.statistics.estimators.estimator import estimate

    rng = np.random.default_rng(3)
    quick = TailsTested(untested=False)
    for shift in (0.0, 0.0, 0.0, 1.0):
        train, population = rng.normal(0, 1, 800), rng.normal(shift, 1, 800)
        full = estimate(train, population, TailsTested(), delta=1e-4, seed=1)
        fast = estimate(train, population, quick, delta=1e-4, seed=1)
        assert fast.epsilon == full.epsilon
        assert fast.leak_p_value == full.leak_p_value
        assert fast.method == full.method == "tails-tested"
        if full.leak_p_value is not None and full.leak_p_value >= 0.05:
            assert fast.untested_epsilon is None
            assert np.isnan(fast.fpr)
        else:
            assert fast.untested_epsilon == full.untested_epsilon
