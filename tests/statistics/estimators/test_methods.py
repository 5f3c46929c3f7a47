"""The estimator configurations and ``estimate``, and ``epsilon_star`` built on them."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np
import pytest

from epsstar import epsilon_star
from epsstar.exceptions import InvalidInputError, PoorFitWarning
from epsstar.statistics.estimators.estimator import MIN_RECORDS, default_delta, estimate
from epsstar.statistics.estimators.methods import (
    CONFIG_TYPES,
    Bootstrap,
    Empirical,
    EstimatorConfig,
    Parametric,
    Tails,
    TailsCrossfit,
    method_config,
)
from epsstar.statistics.names import METHODS


def gamma_losses(n: int = 1500, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.gamma(2.0, 5.0, n), rng.gamma(3.0, 5.0, n)


def test_one_configuration_class_per_method() -> None:
    assert tuple(kind.method for kind in CONFIG_TYPES) == METHODS.names
    assert dict(MIN_RECORDS) == {kind.method: kind.min_records for kind in CONFIG_TYPES}
    for kind in CONFIG_TYPES:
        assert kind.__doc__
        assert len(kind.__doc__) > 200


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: Parametric(family="cauchy"), "family must be one of normal, gmm. Found 'cauchy'."),
        (lambda: Parametric(search="dense"), "search must be one of refine, grid. Found 'dense'."),
        (lambda: Parametric(alpha=0.0), "alpha must be in (0, inf). Found 0.0."),
        (lambda: Parametric(max_components=0), "max_components must be an integer ≥ 1. Found 0."),
        (lambda: Parametric(gof_samples=1.5), "gof_samples must be an integer ≥ 1. Found 1.5."),
        (lambda: Parametric(significance=1.0), "significance must be in (0, 1). Found 1.0."),
        (
            lambda: Empirical(rate_window=(0.5, 0.1)),
            "rate_window high must be in (0.5, 1]. Found 0.1.",
        ),
        (
            lambda: Empirical(rate_window=(-0.1, 0.9)),
            "rate_window low must be in [0, 1). Found -0.1.",
        ),
        (
            lambda: Empirical(rate_window=(0.1,)),
            "rate_window must be a pair (low, high). Found (0.1,).",
        ),
        (lambda: Tails(tail_size=3), "tail_size must be an integer ≥ 5. Found 3."),
        (lambda: TailsCrossfit(tail_size=2.5), "tail_size must be an integer ≥ 5. Found 2.5."),
        (lambda: TailsCrossfit(n_splits=0), "n_splits must be an integer ≥ 1. Found 0."),
        (lambda: Bootstrap(level=1.5), "interval must be in (0, 1). Found 1.5."),
        (lambda: Bootstrap(n_bootstrap=1), "n_bootstrap must be an integer ≥ 2. Found 1."),
    ],
)
def test_configurations_refuse_bad_values_in_one_line(build: Any, message: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        build()
    assert str(caught.value) == message


def test_configurations_are_frozen_values() -> None:
    config = Empirical(rate_window=[0.001, 0.999])  # type: ignore[arg-type]
    assert config.rate_window == (0.001, 0.999)
    assert config == Empirical(rate_window=(0.001, 0.999))
    assert hash(config) == hash(Empirical(rate_window=(0.001, 0.999)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.rate_window = None  # type: ignore[misc]
    assert Empirical().window(1e-3).low == 1e-3
    assert config.window(1e-3).low == 0.001


@pytest.mark.parametrize(
    ("method", "config"),
    [
        ("parametric", Parametric(family="gmm", max_components=3, gof_samples=500)),
        ("empirical", Empirical(rate_window=(0.001, 0.999))),
        ("tails", Tails(tail_size=20)),
        ("tails-crossfit", TailsCrossfit(n_splits=2)),
    ],
)
def test_estimate_matches_epsilon_star(method: str, config: EstimatorConfig) -> None:
    train, population = gamma_losses()
    options = {field.name: getattr(config, field.name) for field in dataclasses.fields(config)}
    assert method_config(method, **options) == config  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PoorFitWarning)
        direct = estimate(train, population, config, delta=1e-4, seed=3)
        given = epsilon_star(train, population, delta=1e-4, method=config, seed=3)
        by_name = epsilon_star(train, population, delta=1e-4, method=method, seed=3)
        defaults = estimate(train, population, type(config)(), delta=1e-4, seed=3)
    assert direct.method == method
    assert direct.seed == 3
    assert direct.to_dict() == given.to_dict()
    # A method's name stands for its configuration with the defaults.
    assert by_name.to_dict() == defaults.to_dict()


def test_estimate_defaults_and_interval() -> None:
    train, population = gamma_losses(400)
    result = estimate(train, population, Empirical(), interval=Bootstrap(0.8, 20))
    assert result.delta == default_delta(400)
    assert result.interval is not None
    assert result.interval.n_bootstrap == 20
    delta = default_delta(400)
    given = epsilon_star(
        train, population, delta=delta, method="empirical", interval=Bootstrap(0.8, 20)
    )
    assert result.interval == given.interval
    # A level alone asks for the default number of resamples.
    level = estimate(train, population, Empirical(), interval=Bootstrap(0.8))
    assert (
        level.interval
        == epsilon_star(train, population, delta=delta, method="empirical", interval=0.8).interval
    )
    assert estimate(train, population, Empirical(), delta=0.0).delta == 0.0


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda a, b: estimate(a, b, "tails"),  # type: ignore[arg-type]
            "config must be one of Parametric, Empirical, Tails, TailsCrossfit, TailsTested, "
            "TailsShapeTested, AtomsCrossfit, AtomsTested. Found 'tails'.",
        ),
        (
            lambda a, b: estimate(a, b, Tails(), interval=0.95),  # type: ignore[arg-type]
            "interval must be a Bootstrap or None. Found 0.95.",
        ),
        (lambda a, b: estimate(a, b, Tails(), seed=-1), "seed must be an integer ≥ 0. Found -1."),
        (
            lambda a, b: estimate(a, b, Tails(), delta=0.0),
            "delta must be in (0, 0.5). Found 0.0.",
        ),
    ],
)
def test_estimate_refuses_bad_arguments(call: Any, message: str) -> None:
    train, population = gamma_losses(200)
    with pytest.raises(InvalidInputError) as caught:
        call(train, population)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("method", "option", "value", "owner"),
    [
        ("tails", "alpha", 2.0, "the parametric method"),
        ("empirical", "max_components", 3, "the parametric method"),
        ("tails-crossfit", "gof_samples", 500, "the parametric method"),
        ("empirical", "significance", 0.01, "the parametric method"),
        ("parametric", "rate_window", (0.001, 0.999), "the empirical method"),
        ("empirical", "tail_size", 10, "the tails methods"),
        ("tails", "n_splits", 2, "the cross-fitted methods"),
    ],
)
def test_an_option_of_another_method_is_refused(
    method: str, option: str, value: object, owner: str
) -> None:
    expected = f"{option} applies to {owner} only. Found method={method!r}."
    with pytest.raises(InvalidInputError) as caught:
        method_config(method, **{option: value})  # type: ignore[arg-type]
    assert str(caught.value) == expected


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda a, b: epsilon_star(a, b, delta=1e-3, method="magic"),  # type: ignore[arg-type]
            "method must be one of parametric, empirical, tails, tails-crossfit, tails-tested, "
            "tails-shape-tested, atoms-crossfit, atoms-tested. "
            "Found 'magic'.",
        ),
        (
            lambda a, b: epsilon_star(a, b, delta=1e-3, method=Bootstrap()),  # type: ignore[arg-type]
            "method must be one of parametric, empirical, tails, tails-crossfit, tails-tested, "
            "tails-shape-tested, atoms-crossfit, atoms-tested. "
            "Found Bootstrap(level=0.95, n_bootstrap=200).",
        ),
        (
            lambda a, b: epsilon_star(a, b, delta=1e-3, interval=1.5),
            "interval must be in (0, 1). Found 1.5.",
        ),
        (
            lambda a, b: epsilon_star(a, b, delta=1e-3, interval="wide"),  # type: ignore[arg-type]
            "interval must be a number. Found 'wide'.",
        ),
    ],
)
def test_epsilon_star_refuses_bad_arguments(call: Any, message: str) -> None:
    train, population = gamma_losses(200)
    with pytest.raises(InvalidInputError) as caught:
        call(train, population)
    assert str(caught.value) == message


def test_family_and_search_go_with_every_method_but_must_be_names() -> None:
    # The command line passes --family and --search with every method.
    assert method_config("tails", family="gmm", search="grid") == Tails()
    with pytest.raises(InvalidInputError, match="Found 'cauchy'"):
        method_config("tails", family="cauchy")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="method must be one of"):
        method_config("magic")  # type: ignore[arg-type]


def test_poor_fit_warning_points_at_the_caller() -> None:
    rng = np.random.default_rng(2)
    bimodal = np.concatenate([rng.normal(0, 0.1, 2000), rng.normal(5, 0.1, 2000)])
    with pytest.warns(PoorFitWarning) as direct:
        estimate(bimodal, bimodal + 0.5, Parametric(), delta=1e-3)
    with pytest.warns(PoorFitWarning) as flat:
        epsilon_star(bimodal, bimodal + 0.5, delta=1e-3, method="parametric")
    assert {w.filename for w in direct} == {w.filename for w in flat} == {__file__}
    assert [str(w.message) for w in direct] == [str(w.message) for w in flat]
