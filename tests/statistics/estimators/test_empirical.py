"""Empirical Epsilon* against a brute-force O(n²) transcription of eq. 7 (each ratio where
its denominator rate is admissible)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from epsstar import epsilon_star
from epsstar.statistics.estimators.empirical import (
    PAPER_EMPIRICAL_WINDOW,
    empirical_rates,
    empirical_supremum,
)
from epsstar.statistics.estimators.ratio_terms import RateWindow


def brute_force(
    train: np.ndarray, population: np.ndarray, delta: float, low: float, high: float
) -> float:
    """Eq. 7 with plain ratios at every distinct loss, rates recounted for each threshold."""
    best = 1.0
    for tau in np.unique(np.concatenate([train, population])):
        t = float(np.mean(population <= tau))
        eta = float(np.mean(train > tau))
        # Each ratio counts where its denominator rate is admissible.
        for numerator, denominator, rate in (
            (1 - delta - eta, t, t),
            (1 - delta - t, eta, eta),
            (eta - delta, 1 - t, t),
            (t - delta, 1 - eta, eta),
        ):
            if low < rate < high:
                best = max(best, numerator / denominator)
    return float(np.log(best))


losses = st.lists(
    st.integers(0, 30).map(lambda k: k / 4), min_size=1, max_size=60
)  # coarse values so that ties between and within the two sets are common


@given(
    train=losses,
    population=losses,
    delta=st.sampled_from([0.0, 1e-3, 0.01, 0.1]),
    paper_window=st.booleans(),
)
def test_matches_brute_force(
    train: list[float], population: list[float], delta: float, paper_window: bool
) -> None:
    a, b = np.array(train), np.array(population)
    window = PAPER_EMPIRICAL_WINDOW if paper_window else RateWindow.for_delta(delta)
    found = empirical_supremum(a, b, delta, window)
    expected = brute_force(a, b, delta, window.low, window.high)
    assert found.epsilon == pytest.approx(expected, rel=1e-12, abs=1e-12)
    if found.term:
        # The reported location reproduces the value.
        assert np.mean(b <= found.threshold) == pytest.approx(found.fpr)
        assert np.mean(a > found.threshold) == pytest.approx(found.fnr)


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 200), delta=st.sampled_from([0.0, 1e-3]))
def test_swapping_roles_gives_the_same_value(seed: int, n: int, delta: float) -> None:
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=n), rng.normal(0.5, size=n + 3)
    forward = epsilon_star(a, b, delta=delta, method="empirical")
    backward = epsilon_star(b, a, delta=delta, method="empirical")
    assert backward.epsilon == pytest.approx(forward.epsilon, rel=1e-12, abs=1e-15)
    # Which ratio attains it may differ: ties between thresholds are common in small samples.


def test_identical_samples_give_zero() -> None:
    values = np.random.default_rng(3).gamma(2, 5, 20_000)
    assert epsilon_star(values, values.copy(), delta=1e-5, method="empirical").epsilon == 0.0


def test_rates_at_every_distinct_loss() -> None:
    thresholds, fpr, fnr = empirical_rates(np.array([1.0, 2.0, 2.0]), np.array([2.0, 3.0]))
    np.testing.assert_array_equal(thresholds, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(fpr, [0.0, 0.5, 1.0])
    np.testing.assert_allclose(fnr, [2 / 3, 0.0, 0.0])


def direct_count(
    train: np.ndarray, population: np.ndarray, delta: float, window: RateWindow
) -> float:
    """Eq. 7 with plain ratios at every distinct loss, the rates counted by binary search."""
    thresholds = np.unique(np.concatenate([train, population]))
    t = np.searchsorted(np.sort(population), thresholds, side="right") / population.size
    eta = 1.0 - np.searchsorted(np.sort(train), thresholds, side="right") / train.size
    inside = (window.low < t) & (t < window.high) & (window.low < eta) & (eta < window.high)
    t, eta = t[inside], eta[inside]
    ratios = [(1 - delta - eta) / t, (1 - delta - t) / eta, (eta - delta) / (1 - t)]
    ratios.append((t - delta) / (1 - eta))
    return float(np.log(max(1.0, *(float(r.max()) for r in ratios))))


def test_matches_a_direct_count_on_a_million_records() -> None:
    rng = np.random.default_rng(0)
    train = np.round(rng.gamma(2, 5, 1_000_000), 3)  # rounded: many ties within and between
    population = np.round(rng.gamma(3, 5, 1_000_000), 3)
    delta = 1e-6
    found = empirical_supremum(train, population, delta)
    expected = direct_count(train, population, delta, RateWindow.for_delta(delta))
    assert found.epsilon > 1.0
    assert found.epsilon == pytest.approx(expected, rel=1e-10)
    assert np.mean(population <= found.threshold) == pytest.approx(found.fpr, rel=1e-12)
    assert np.mean(train > found.threshold) == pytest.approx(found.fnr, rel=1e-12)
