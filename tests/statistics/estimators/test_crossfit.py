"""Cross-fitted Epsilon* (``method="tails-crossfit"``,
:mod:`epsstar.statistics.estimators.crossfit`)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from epsstar import epsilon_star
from epsstar.exceptions import InsufficientDataError, InvalidInputError
from epsstar.statistics.estimators.crossfit import crossfit_epsilon, ratio_maximisers, score_on
from epsstar.statistics.estimators.methods import TailsCrossfit, method_config
from epsstar.statistics.estimators.optimizer import parametric_supremum
from epsstar.statistics.estimators.ratio_terms import Supremum


def eq7_ratio(term: int, fpr: float, fnr: float, delta: float) -> float:
    """The four ratios of eq. 7, transcribed with plain floats."""
    t, eta = fpr, fnr
    return [
        (1 - delta - eta) / t,
        (1 - delta - t) / eta,
        (eta - delta) / (1 - t),
        (t - delta) / (1 - eta),
    ][term - 1]


@pytest.mark.parametrize(("term", "fpr", "fnr"), [(1, 1e-4, 0.7), (2, 0.6, 2e-3), (3, 0.9, 0.95)])
def test_score_is_the_ratio_at_the_same_denominator_rate(term: int, fpr: float, fnr: float) -> None:
    """The scoring distributions' test has the chosen denominator rate; brute-force ratio."""
    train, population, delta = stats.norm(-1.0), stats.norm(0.0, 1.2), 1e-5
    chosen = Supremum(epsilon=1.0, threshold=0.0, fpr=fpr, fnr=fnr, term=term)
    if term in (1, 3):
        threshold = population.ppf(fpr)
        rates = (fpr, train.sf(threshold))
    else:
        threshold = train.isf(fnr)
        rates = (population.cdf(threshold), fnr)
    expected = max(math.log(eq7_ratio(term, *rates, delta)), 0.0)
    assert score_on(chosen, train, population, delta) == pytest.approx(expected, rel=1e-9)


def test_score_of_the_constant_one_is_zero() -> None:
    nan = float("nan")
    chosen = Supremum(epsilon=0.0, threshold=nan, fpr=nan, fnr=nan, term=0)
    assert score_on(chosen, stats.norm(-1), stats.norm(), 1e-5) == 0.0


@pytest.mark.parametrize(
    ("train", "population"),
    [
        (stats.norm(-1.0), stats.norm(0.0)),
        (stats.gamma(2.0, scale=5.0), stats.gamma(4.0, scale=5.0)),
        (stats.logistic(-0.5), stats.norm(0.0, 1.5)),
    ],
)
def test_ratio_maximisers_match_a_dense_grid(train: object, population: object) -> None:
    """Each ratio's located maximum against a brute-force dense quantile grid."""
    delta = 1e-4
    found = ratio_maximisers(train, population, delta)  # type: ignore[arg-type]
    q = np.concatenate([np.geomspace(delta, 0.5, 20_000), 1 - np.geomspace(delta, 0.5, 20_000)])
    grid = np.concatenate([train.ppf(q), population.ppf(q)])  # type: ignore[attr-defined]
    fpr, fnr = population.cdf(grid), train.sf(grid)  # type: ignore[attr-defined]
    ok = (fpr > delta) & (fpr < 1 - delta) & (fnr > delta) & (fnr < 1 - delta)
    for supremum in found:
        with np.errstate(divide="ignore", invalid="ignore"):
            values = np.log(eq7_ratio(supremum.term, fpr[ok], fnr[ok], delta))
        best = float(np.nanmax(values))
        assert supremum.epsilon == pytest.approx(best, abs=2e-3), supremum.term
    overall = parametric_supremum(train, population, delta)  # type: ignore[arg-type]
    assert max(s.epsilon for s in found) == pytest.approx(overall.epsilon, abs=1e-6)


@pytest.mark.parametrize("delta", [1e-5, 1e-3])
def test_with_noise_free_fits_it_is_the_true_epsilon(delta: float) -> None:
    """If every half's fit were the true law, cross-fitting would change nothing."""
    train, population = stats.gamma(2.0, scale=5.0), stats.gamma(3.0, scale=5.0)
    found = crossfit_epsilon(
        np.arange(200.0),
        np.arange(200.0),
        delta,
        lambda a, b: (train, population),
        n_splits=2,
    )
    truth = parametric_supremum(train, population, delta)
    assert found.epsilon == pytest.approx(truth.epsilon, abs=1e-6)
    assert found.term == truth.term


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    shift=st.floats(-1.5, 1.5),
    delta=st.sampled_from([1e-5, 1e-3]),
)
def test_properties(seed: int, shift: float, delta: float) -> None:
    rng = np.random.default_rng(seed)
    train, population = rng.normal(-shift, 1.0, 400), rng.normal(0.0, 1.0, 400)
    result = epsilon_star(train, population, delta=delta, method="tails-crossfit", seed=seed)
    assert 0.0 <= result.epsilon < math.log((1 - delta) / delta)
    assert result.epsilon == max(result.crossfit_scores)
    assert min(result.crossfit_scores) >= 0.0
    again = epsilon_star(train, population, delta=delta, method="tails-crossfit", seed=seed)
    assert again.epsilon == result.epsilon
    if result.epsilon == 0.0:
        assert result.attained_by == "1"


def test_result_reports_the_plug_in_value_and_scores() -> None:
    rng = np.random.default_rng(2)
    train, population = rng.gamma(2.0, 5.0, 2000), rng.gamma(3.0, 5.0, 2000)
    result = epsilon_star(train, population, delta=1e-5, method="tails-crossfit")
    plug_in = epsilon_star(train, population, delta=1e-5, method="tails")
    assert result.plug_in_epsilon == plug_in.epsilon
    assert result.threshold == plug_in.threshold
    payload = result.to_dict()
    assert payload["method"] == "tails-crossfit"
    assert payload["plug_in_epsilon_star"] == plug_in.epsilon
    assert payload["crossfit_scores"] == list(result.crossfit_scores)
    assert len(payload["crossfit_scores"]) == 4
    assert plug_in.to_dict()["crossfit_scores"] is None


def test_options() -> None:
    values = np.random.default_rng(0).normal(size=400)
    with pytest.raises(InvalidInputError, match="n_splits"):
        method_config("tails", n_splits=2)
    with pytest.raises(InvalidInputError, match="n_splits"):
        epsilon_star(values, values, delta=1e-3, method=TailsCrossfit(n_splits=0))
    with pytest.raises(
        InsufficientDataError, match="at least 100 values for the tails-crossfit method.*Found 99"
    ):
        epsilon_star(values[:99], values, delta=1e-3, method="tails-crossfit")
    result = epsilon_star(values, values[::-1], delta=1e-3, method=TailsCrossfit(tail_size=10))
    assert result.epsilon >= 0.0


def test_no_leak_bias_is_smaller_than_the_plug_in() -> None:
    """Identical Gamma(2, 5) laws, n = 1e4, δ = 1e-3, 12 seeded samples.

    The plug-in tails estimate averages about +0.10 nats here (the maximum of
    its noise) and fails the 0.06 bound; the cross-fitted one averages about
    +0.02-0.06 (``docs/accuracy.md``).
    """
    rng = np.random.default_rng([23, 0])
    crossed, plug_in = [], []
    for seed in range(12):
        train, population = rng.gamma(2.0, 5.0, 10_000), rng.gamma(2.0, 5.0, 10_000)
        result = epsilon_star(train, population, delta=1e-3, method="tails-crossfit", seed=seed)
        crossed.append(result.epsilon)
        assert result.plug_in_epsilon is not None
        plug_in.append(result.plug_in_epsilon)
    assert np.mean(crossed) < 0.06
    assert np.mean(plug_in) > 0.06


def test_discrete_losses_take_the_atoms_estimator() -> None:
    """Saturated probabilities leave two loss values; a tail model would invent ratios."""
    from epsstar.statistics.estimators.estimator import epsilon_star

    rng = np.random.default_rng(4)
    train = np.where(rng.random(30_000) < 0.76, -36.04, 36.04)
    population = np.where(rng.random(15_000) < 0.75, -36.04, 36.04)
    exact = epsilon_star(train, population, delta=3e-6, method="empirical")
    plug_in = epsilon_star(train, population, delta=3e-6, method="tails")
    assert plug_in.method == "empirical"
    assert plug_in.epsilon == exact.epsilon
    for method, named in (("tails-crossfit", "atoms-crossfit"), ("tails-tested", "atoms-tested")):
        result = epsilon_star(train, population, delta=3e-6, method=method)  # type: ignore[arg-type]
        assert result.method == named
        # The same estimate as the atoms method asked for by name.
        assert result.epsilon == epsilon_star(train, population, delta=3e-6, method=named).epsilon
        assert result.epsilon < 0.05
        assert result.note is not None
        assert "take 2 distinct values" in result.note
        assert result.to_dict()["note"] == result.note
    # Continuous losses keep the tail model and carry no note.
    continuous = epsilon_star(
        rng.normal(size=2000), rng.normal(size=2000), delta=1e-4, method="tails-crossfit"
    )
    assert continuous.method == "tails-crossfit"
    assert continuous.note is None


def test_atoms_at_both_ends_fall_back_but_one_end_does_not() -> None:
    from epsstar.statistics.estimators.estimator import epsilon_star

    rng = np.random.default_rng(5)

    def saturated(n: int, share: float) -> np.ndarray:
        values = np.where(rng.random(n) < share, -36.04, 36.04)
        middle = rng.random(n) < 0.03  # a few unsaturated predictions
        values[middle] = rng.normal(0.0, 5.0, middle.sum())
        return values

    train, population = saturated(30_000, 0.76), saturated(15_000, 0.75)
    both = epsilon_star(train, population, delta=3e-6)
    assert both.method == "atoms-tested"
    assert both.note is not None
    assert "both tails are single values" in both.note
    # An atom at the low end only (confident correct predictions): the tail model is kept.
    low_train = np.where(rng.random(5000) < 0.7, -36.04, rng.gamma(2.0, 2.0, 5000))
    low_population = np.where(rng.random(5000) < 0.6, -36.04, rng.gamma(2.5, 2.0, 5000))
    one = epsilon_star(low_train, low_population, delta=1e-4, method="tails-crossfit")
    assert one.method == "tails-crossfit"
    assert one.note is None
