"""Multi-class cross-entropy refuses a 1-D probability vector (a binary model's output)."""

from __future__ import annotations

import numpy as np
import pytest

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.losses import multiclass_cross_entropy_from_probabilities


def test_one_dimensional_probabilities_are_refused() -> None:
    with pytest.raises(InvalidInputError, match=r"multi-class model must be 2-D.* Found shape"):
        multiclass_cross_entropy_from_probabilities(np.array([0, 1, 1]), np.array([0.2, 0.7, 0.9]))


def test_two_columns_give_minus_log_of_the_true_class() -> None:
    probabilities = np.array([[0.8, 0.2], [0.3, 0.7]])
    losses = multiclass_cross_entropy_from_probabilities(np.array([0, 1]), probabilities)
    # 1e-12 relative: −log p of the labelled column, by hand
    assert np.allclose(losses, -np.log([0.8, 0.7]), rtol=1e-12, atol=0)
