"""Held-out thresholds move down to a grid edge where any sketch cannot count them."""

from __future__ import annotations

import numpy as np

from epsstar.statistics.bounds.held_out_bound import countable
from epsstar.statistics.summaries.loss_sketch import sketch_losses


def test_a_threshold_in_one_sketch_body_moves_to_an_exact_edge() -> None:
    rng = np.random.default_rng(2)
    wide = sketch_losses(rng.normal(0.0, 1.0, 2000), k=40)
    complete = rng.normal(0.0, 1.0, 50)  # every value kept: counts exactly anywhere
    thresholds = np.array([0.01234, -3.5])  # the body of `wide`, then its lowest 20 values
    assert wide.countable(thresholds).tolist() == [False, True]
    moved = countable(thresholds, wide, complete)
    assert moved[1] == thresholds[1]
    assert moved[0] < thresholds[0]
    assert moved[0] == wide.floor_edges(thresholds[:1])[0]
    _, exact = wide.count_below(moved)
    assert exact.all()
