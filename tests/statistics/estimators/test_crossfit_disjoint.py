"""ratio_maximisers when no threshold has both rates inside (δ, 1 − δ)."""

from __future__ import annotations

import math

from epsstar.statistics.estimators.crossfit import ratio_maximisers
from epsstar.statistics.fitting import NormalFit


def test_disjoint_fits_give_every_term_minus_infinity() -> None:
    # population's δ-quantile (≈ 96.9) lies above the training set's (1 − δ)-quantile (≈ 3.1)
    found = ratio_maximisers(NormalFit(0.0, 1.0), NormalFit(100.0, 1.0), 1e-3)
    assert [s.term for s in found] == [1, 2, 3, 4]
    assert all(s.epsilon == -math.inf for s in found)
    assert all(math.isnan(s.threshold) and math.isnan(s.fpr) and math.isnan(s.fnr) for s in found)
