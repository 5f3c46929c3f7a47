"""TailsTested passes its number of halvings on to the cross-fitted estimate it tests."""

from __future__ import annotations

import numpy as np

from epsstar.statistics.estimators.estimator import epsilon_star
from epsstar.statistics.estimators.methods import TailsCrossfit, TailsTested


def test_tested_estimate_is_the_crossfit_with_the_same_halvings() -> None:
    rng = np.random.default_rng(21)
    train, population = rng.normal(1.0, 1.0, 2000), rng.normal(1.6, 1.0, 2000)
    tested = epsilon_star(train, population, delta=1e-5, seed=3, method=TailsTested(n_splits=3))
    three = epsilon_star(train, population, delta=1e-5, seed=3, method=TailsCrossfit(n_splits=3))
    one = epsilon_star(train, population, delta=1e-5, seed=3, method=TailsCrossfit(n_splits=1))
    assert three.epsilon != one.epsilon  # the halvings matter on this sample
    assert tested.untested_epsilon == three.epsilon
