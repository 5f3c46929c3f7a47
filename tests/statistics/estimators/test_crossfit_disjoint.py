"""ratio_maximisers when the two fits barely overlap: a rate of 0 is evidence."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from epsstar.statistics.estimators.crossfit import ratio_maximisers
from epsstar.statistics.fitting import NormalFit


def test_disjoint_fits_give_the_ratio_of_their_admissible_rates() -> None:
    # No threshold has both rates inside (δ, 1 − δ) (the population's δ-quantile ≈ 96.9 lies
    # above the training set's (1 − δ)-quantile ≈ 3.1), but every test between the two has
    # FNR ≈ 0: at FPR δ the first ratio is (1 − δ − FNR)/δ, which (ε, δ)-DP must meet.
    delta = 1e-3
    found = ratio_maximisers(NormalFit(0.0, 1.0), NormalFit(100.0, 1.0), delta)
    assert [s.term for s in found] == [1, 2, 3, 4]
    expected = math.log((1 - delta) / delta)
    assert math.isclose(found[0].epsilon, expected, rel_tol=1e-6)
    assert math.isclose(found[1].epsilon, expected, rel_tol=1e-6)
    # The reversed tests (members above the threshold) have no positive numerator.
    assert found[2].epsilon == -math.inf
    assert found[3].epsilon == -math.inf
    assert math.isclose(found[0].fpr, delta, rel_tol=1e-6)
    assert found[0].fnr < 1e-300 or found[0].fnr == 0.0
    assert np.isclose(stats.norm.cdf(found[0].threshold, 100.0), delta, rtol=1e-6)
