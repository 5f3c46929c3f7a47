"""The self-check of a loader against the model's own predictions (own_predictions)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.special import expit, softmax

from epsstar.audit.model.own_predictions import (
    OwnPredictions,
    check_own_predictions,
    class_probabilities,
)
from epsstar.exceptions import InvalidInputError
from epsstar.statistics.names import OutputKind

SOURCE = Path("model.bin")


def own(values: np.ndarray, kind: OutputKind = "probabilities") -> OwnPredictions:
    return OwnPredictions("Lib", "predict_proba", kind, values, 1e-9)


def test_one_value_per_record_and_logits_become_class_probabilities() -> None:
    z = np.array([-3.0, 0.0, 2.5])
    expected = np.column_stack([expit(-z), expit(z)])
    np.testing.assert_array_equal(class_probabilities(z, "logits"), expected)
    p = expit(z)
    np.testing.assert_array_equal(
        class_probabilities(p, "probabilities"), np.column_stack([1 - p, p])
    )
    scores = np.array([[1.0, 2.0, 0.5], [0.0, 0.0, 9.0]])
    np.testing.assert_array_equal(class_probabilities(scores, "logits"), softmax(scores, axis=1))


def test_agreement_within_the_tolerance_passes() -> None:
    z = np.linspace(-5, 5, 11)
    p = expit(z)
    check_own_predictions(SOURCE, z, "logits", own(np.column_stack([1 - p, p]) + 5e-10))


def test_a_difference_beyond_the_tolerance_is_refused_naming_model_and_difference() -> None:
    z = np.zeros(4)
    theirs = np.full(4, 0.5)
    theirs[2] = 0.75
    with pytest.raises(InvalidInputError) as caught:
        check_own_predictions(SOURCE, z, "logits", own(theirs))
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("the Lib model in model.bin must be scored as its own predict_proba")
    assert "record 2" in message
    assert message.endswith("Found a difference of 0.25.")


def test_nan_on_one_side_only_is_a_difference() -> None:
    with pytest.raises(InvalidInputError, match=r"differ from it by up to inf"):
        check_own_predictions(SOURCE, np.array([0.0, np.nan]), "logits", own(np.array([0.5, 0.5])))


def test_a_different_number_of_classes_is_refused() -> None:
    with pytest.raises(InvalidInputError, match=r"as many class probabilities.*Found 3"):
        check_own_predictions(SOURCE, np.zeros(2), "logits", own(np.full((2, 3), 1 / 3)))
