"""log_odds_matrix reads a single reference model given as a 1-D array."""

from __future__ import annotations

import numpy as np

from epsstar.statistics.attacks.confidence import log_odds_matrix


def test_a_vector_is_one_reference_model() -> None:
    matrix = log_odds_matrix("reference log-odds", [0.5, -1.0, 2.0], 3)
    assert matrix.shape == (1, 3)
    assert matrix.dtype == np.float64
    assert matrix[0].tolist() == [0.5, -1.0, 2.0]
