"""The tails estimator reports each side's own tail fit under its own name."""

from __future__ import annotations

import numpy as np

from epsstar.statistics.estimators.estimator import epsilon_star
from epsstar.statistics.estimators.methods import Tails


def test_tail_fits_are_named_by_side() -> None:
    rng = np.random.default_rng(9)
    train, population = rng.normal(3.0, 1.0, 1200), rng.normal(4.5, 1.0, 3000)
    result = epsilon_star(train, population, delta=1e-5, method=Tails(tail_size=40))
    assert result.tail_fits is not None
    assert set(result.tail_fits) == {"train", "population"}
    assert result.tail_fits["train"]["n"] == 1200
    assert result.tail_fits["population"]["n"] == 3000
