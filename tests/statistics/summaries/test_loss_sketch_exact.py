"""Loss sketches: AUC, counts on grid edges and the rate window, against direct counts."""

from __future__ import annotations

import numpy as np

from epsstar.statistics.estimators.empirical import sketch_supremum
from epsstar.statistics.estimators.ratio_terms import RateWindow
from epsstar.statistics.summaries.loss_sketch import (
    BINS,
    HALF_WIDTH,
    _edges,
    sketch_auc,
    sketch_losses,
)


def test_auc_of_complete_sketches_is_the_pair_count() -> None:
    rng = np.random.default_rng(0)
    members, others = rng.normal(size=50), rng.normal(0.5, 1.0, size=70)
    # continuous draws: no ties, so AUC = P(l_m < l_o) counted over all pairs
    expected = np.mean(members[:, None] < others[None, :])
    auc = sketch_auc(sketch_losses(members), sketch_losses(others))
    # 1e-12: one bin per distinct value would be exact; rounding of one division only
    assert np.isclose(auc, expected, rtol=0, atol=1e-12)


def test_count_below_on_a_grid_edge_between_the_tails_is_exact() -> None:
    values = np.random.default_rng(0).normal(size=200)
    sketch = sketch_losses(values, k=10)
    edges = _edges(BINS, HALF_WIDTH)
    taus = edges[np.abs(edges) < 0.5][:3]
    counts, exact = sketch.count_below(taus)
    assert exact.all()
    assert counts.tolist() == [float(np.sum(values <= t)) for t in taus]


def test_supremum_reads_only_rates_inside_the_window() -> None:
    rng = np.random.default_rng(3)
    train, population = sketch_losses(rng.normal(0, 1, 300)), sketch_losses(rng.normal(1, 1, 300))
    wide = sketch_supremum(train, population, 1e-3)
    narrow = sketch_supremum(train, population, 1e-3, window=RateWindow(0.3, 0.7))
    assert narrow.epsilon < wide.epsilon
