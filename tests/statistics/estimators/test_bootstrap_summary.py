"""The replicates' summary carried by a bootstrap interval, against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from epsstar.statistics.estimators.bootstrap import interval_from_replicates


def test_interval_reports_the_replicates_mean_and_quantiles() -> None:
    replicates = np.array([0.2, 0.4, 0.5, 0.9, 1.3])
    interval = interval_from_replicates(0.6, replicates, level=0.5)
    # 1e-12: numpy's mean and linear quantiles of the same five numbers, by hand
    assert interval.replicate_mean == pytest.approx(3.3 / 5, abs=1e-12)
    assert (interval.low, interval.high) == pytest.approx((0.4, 0.9), abs=1e-12)
