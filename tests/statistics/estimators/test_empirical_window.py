"""The empirical estimator: its rate window, and summarised losses read through sketches."""

from __future__ import annotations

import numpy as np

from epsstar.statistics.estimators.empirical import sketch_supremum
from epsstar.statistics.estimators.estimator import epsilon_star
from epsstar.statistics.estimators.methods import Empirical
from epsstar.statistics.summaries.loss_summary import SummaryPlan, summarise_losses


def _losses() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(12)
    return rng.normal(1.0, 1.0, 600), rng.normal(2.0, 1.0, 600)


def test_a_given_rate_window_bounds_both_rates() -> None:
    train, population = _losses()
    narrow = epsilon_star(train, population, delta=1e-3, method=Empirical(rate_window=(0.3, 0.7)))
    wide = epsilon_star(train, population, delta=1e-3, method="empirical")
    assert 0.3 < narrow.fpr < 0.7
    assert 0.3 < narrow.fnr < 0.7
    # the unrestricted maximum lies outside the window on this sample
    assert narrow.epsilon < wide.epsilon


def test_summaries_without_atoms_use_the_sketches_exact_counts() -> None:
    train, population = _losses()
    t = summarise_losses(train, SummaryPlan(1, 0, k=60))
    p = summarise_losses(population, SummaryPlan(1, 1, k=60))
    assert t.atoms is None
    assert p.atoms is None
    result = epsilon_star(t, p, delta=1e-3, method="empirical")
    direct = sketch_supremum(t.whole, p.whole, 1e-3)
    assert result.epsilon == direct.epsilon
    assert result.threshold == direct.threshold
