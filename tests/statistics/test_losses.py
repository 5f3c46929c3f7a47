"""Tests of the per-record membership-inference losses in epsstar.statistics.losses."""

from __future__ import annotations

import math
import re
from typing import Any

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.special import expit, log_softmax, softmax

from epsstar.exceptions import InsufficientDataError, InvalidInputError
from epsstar.statistics.losses import (
    MAX_ABS_LOGIT,
    PROBABILITY_CLIP,
    ROW_SUM_TOLERANCE,
    binary_cross_entropy_from_logits,
    binary_cross_entropy_from_probabilities,
    binary_logit_loss_from_logits,
    binary_logit_loss_from_probabilities,
    compute_losses,
    multiclass_cross_entropy_from_logits,
    multiclass_cross_entropy_from_probabilities,
    multiclass_logit_loss_from_logits,
    multiclass_logit_loss_from_probabilities,
)

mpmath.mp.dps = 50
EPS = float(np.finfo(np.float64).eps)
FAST = settings(max_examples=60, deadline=None)


# ------------------------------------------------------------ high-precision references


def mp_logit(p: float) -> float:
    x = mpmath.mpf(p)
    return float(mpmath.log(x) - mpmath.log(1 - x))


def mp_logsumexp(values: list[float]) -> Any:
    return mpmath.log(mpmath.fsum(mpmath.exp(mpmath.mpf(v)) for v in values))


# ------------------------------------------------------------------------ golden values

BINARY_PROBABILITIES = [1e-300, 1e-12, 0.01, 0.2, 0.5, 0.7, 0.999, 1 - 1e-9]


@pytest.mark.parametrize("y", [0, 1])
def test_binary_logit_loss_golden(y: int) -> None:
    p = np.array(BINARY_PROBABILITIES)
    expected = [
        (1 - 2 * y) * mp_logit(max(min(v, 1 - PROBABILITY_CLIP), PROBABILITY_CLIP)) for v in p
    ]
    got = binary_logit_loss_from_probabilities(np.full(p.size, y), p)
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)


def test_binary_logit_loss_hand_values() -> None:
    # logit(0.8) = log 4, logit(0.5) = 0.
    got = binary_logit_loss_from_probabilities([1, 0, 1], [0.8, 0.8, 0.5])
    np.testing.assert_allclose(got, [-math.log(4), math.log(4), 0.0], atol=1e-15)
    got = binary_logit_loss_from_logits([1, 0], [2.5, 2.5])
    np.testing.assert_array_equal(got, [-2.5, 2.5])


@pytest.mark.parametrize("y", [0, 1])
def test_binary_cross_entropy_golden(y: int) -> None:
    p = np.array(BINARY_PROBABILITIES)
    clipped = [mpmath.mpf(max(min(v, 1 - PROBABILITY_CLIP), PROBABILITY_CLIP)) for v in p]
    expected = [float(-mpmath.log(c if y == 1 else 1 - c)) for c in clipped]
    got = binary_cross_entropy_from_probabilities(np.full(p.size, y), p)
    np.testing.assert_allclose(got, expected, rtol=1e-13)

    z = np.array([-700.0, -30.0, -1.5, 0.0, 0.3, 40.0, 700.0])
    expected_z = [float(mpmath.log1p(mpmath.exp((1 - 2 * y) * mpmath.mpf(v)))) for v in z]
    got_z = binary_cross_entropy_from_logits(np.full(z.size, y), z)
    np.testing.assert_allclose(got_z, expected_z, rtol=1e-13)


MULTICLASS_LOGITS = np.array(
    [
        [2.0, -1.0, 0.5, 3.0],
        [-40.0, 35.0, 34.0, 0.0],
        [800.0, 799.0, -800.0, 0.0],
        [1e-3, 2e-3, 0.0, -1e-3],
    ]
)
MULTICLASS_LABELS = np.array([3, 0, 1, 2])


def test_multiclass_logit_loss_from_logits_golden() -> None:
    expected = []
    for row, y in zip(MULTICLASS_LOGITS, MULTICLASS_LABELS, strict=True):
        others = [v for j, v in enumerate(row) if j != y]
        expected.append(float(mp_logsumexp(others) - mpmath.mpf(row[y])))
    got = multiclass_logit_loss_from_logits(MULTICLASS_LABELS, MULTICLASS_LOGITS)
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-13)
    assert np.all(np.isfinite(got))


def test_multiclass_cross_entropy_from_logits_golden() -> None:
    expected = [
        float(mp_logsumexp(list(row)) - mpmath.mpf(row[y]))
        for row, y in zip(MULTICLASS_LOGITS, MULTICLASS_LABELS, strict=True)
    ]
    got = multiclass_cross_entropy_from_logits(MULTICLASS_LABELS, MULTICLASS_LOGITS)
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-13)


def test_multiclass_from_probabilities_golden() -> None:
    p = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25], [1e-20, 1e-3, 1 - 1e-3]])
    y = np.array([2, 0, 0])
    p_y = [max(p[i, y[i]], PROBABILITY_CLIP) for i in range(3)]
    np.testing.assert_allclose(
        multiclass_logit_loss_from_probabilities(y, p), [-mp_logit(v) for v in p_y], rtol=1e-13
    )
    np.testing.assert_allclose(
        multiclass_cross_entropy_from_probabilities(y, p),
        [float(-mpmath.log(mpmath.mpf(v))) for v in p_y],
        rtol=1e-13,
    )


# ------------------------------------------------------------------------- consistency

logit_values = st.floats(-30.0, 30.0, allow_nan=False)


@FAST
@given(st.lists(st.tuples(logit_values, st.integers(0, 1)), min_size=1, max_size=20))
def test_binary_probabilities_match_logits(pairs: list[tuple[float, int]]) -> None:
    z = np.array([v for v, _ in pairs])
    y = np.array([label for _, label in pairs])
    p = expit(z)
    # Storing p = σ(z) rounds 1 − p by up to ε/2 absolutely, i.e. relatively by ≈ ε·e^z.
    tolerance = 4 * EPS * (1 + np.exp(np.abs(z)))
    for loss in ("logit", "cross_entropy"):
        from_p = compute_losses(y, p, loss=loss)
        from_z = compute_losses(y, z, loss=loss, outputs="logits")
        assert np.all(np.abs(from_p - from_z) <= tolerance + 1e-12 * np.abs(from_z))


@FAST
@given(hnp.arrays(np.float64, st.integers(1, 20), elements=st.floats(1e-6, 1 - 1e-6)))
def test_two_columns_match_one_column(p: np.ndarray) -> None:
    for y in (np.zeros(p.size, dtype=int), np.ones(p.size, dtype=int)):
        two = np.column_stack([1 - p, p])
        one = p[:, None]
        for function in (
            binary_logit_loss_from_probabilities,
            binary_cross_entropy_from_probabilities,
        ):
            np.testing.assert_allclose(function(y, two), function(y, one), rtol=1e-9, atol=1e-9)
            np.testing.assert_allclose(function(y, two), function(y, p), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(
            compute_losses(y, two), binary_logit_loss_from_probabilities(y, p), rtol=1e-9, atol=1e-9
        )


@FAST
@given(hnp.arrays(np.float64, st.integers(1, 20), elements=st.floats(-50, 50)), st.data())
def test_two_column_logits_match_log_odds(z: np.ndarray, data: st.DataObject) -> None:
    y = data.draw(hnp.arrays(np.int64, z.size, elements=st.integers(0, 1)))
    shift = data.draw(st.floats(-20, 20))
    two = np.column_stack([np.full(z.size, shift), z + shift])
    np.testing.assert_allclose(
        binary_logit_loss_from_logits(y, two), binary_logit_loss_from_logits(y, z), atol=1e-12
    )
    np.testing.assert_allclose(
        compute_losses(y, two, loss="cross_entropy", outputs="logits"),
        binary_cross_entropy_from_logits(y, z),
        rtol=1e-12,
        atol=1e-12,
    )


@FAST
@given(st.integers(2, 6).flatmap(lambda k: st.tuples(st.just(k), st.integers(1, 12))), st.data())
def test_multiclass_logits_match_softmax_probabilities(
    shape: tuple[int, int], data: st.DataObject
) -> None:
    k, n = shape
    z = data.draw(hnp.arrays(np.float64, (n, k), elements=st.floats(-10, 10)))
    y = data.draw(hnp.arrays(np.int64, n, elements=st.integers(0, k - 1)))
    p = softmax(z, axis=1)
    p_y = p[np.arange(n), y]
    # Rounding of p_y costs ≈ ε / (1 − p_y) in log(1 − p_y).
    tolerance = 8 * EPS / (1 - p_y) + 1e-12
    from_z = multiclass_logit_loss_from_logits(y, z)
    assert np.all(np.abs(multiclass_logit_loss_from_probabilities(y, p) - from_z) <= tolerance)
    assert np.all(np.abs(compute_losses(y, p) - from_z) <= tolerance)
    np.testing.assert_allclose(
        compute_losses(y, z, loss="cross_entropy", outputs="logits"),
        -log_softmax(z, axis=1)[np.arange(n), y],
        rtol=1e-12,
        atol=1e-12,
    )
    np.testing.assert_allclose(
        multiclass_cross_entropy_from_probabilities(y, p),
        multiclass_cross_entropy_from_logits(y, z),
        rtol=1e-9,
        atol=1e-12,
    )


# ------------------------------------------------------------------- the 0/1 probability rule


def test_clip_constants() -> None:
    assert PROBABILITY_CLIP == 2.0**-52
    assert abs(MAX_ABS_LOGIT - 52 * math.log(2)) < 1e-13
    assert 36.04 < MAX_ABS_LOGIT < 36.05
    assert ROW_SUM_TOLERANCE == 1e-3


def test_probabilities_zero_and_one_give_documented_values() -> None:
    y = [1, 1, 0, 0]
    p = [1.0, 0.0, 1.0, 0.0]
    logit = compute_losses(y, p)
    np.testing.assert_allclose(logit, np.array([-1, 1, 1, -1]) * MAX_ABS_LOGIT, rtol=1e-15)
    cross_entropy = compute_losses(y, p, loss="cross_entropy")
    small = -math.log1p(-PROBABILITY_CLIP)
    np.testing.assert_allclose(
        cross_entropy, [small, MAX_ABS_LOGIT + small, MAX_ABS_LOGIT + small, small], rtol=1e-15
    )
    rows = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    np.testing.assert_allclose(
        compute_losses([0, 0], rows), [-MAX_ABS_LOGIT, MAX_ABS_LOGIT], rtol=1e-15
    )
    assert np.all(np.isfinite(compute_losses([0, 0], rows, loss="cross_entropy")))


@FAST
@given(
    hnp.arrays(np.float64, st.integers(1, 30), elements=st.floats(0.0, 1.0)),
    st.sampled_from(["logit", "cross_entropy"]),
)
def test_losses_from_probabilities_are_bounded(p: np.ndarray, loss: str) -> None:
    for y in (np.zeros(p.size), np.ones(p.size)):
        values = compute_losses(y, p, loss=loss)  # type: ignore[arg-type]
        assert values.dtype == np.float64
        assert values.shape == p.shape
        assert np.all(np.abs(values) <= MAX_ABS_LOGIT + 1e-12)


# -------------------------------------------------------------------------- sign convention


@FAST
@given(
    st.floats(0.0, 1.0).flatmap(lambda a: st.tuples(st.just(a), st.floats(a, 1.0))),
    st.sampled_from(["logit", "cross_entropy"]),
)
def test_more_confident_correct_means_lower_loss(pair: tuple[float, float], loss: str) -> None:
    low, high = pair
    ones = compute_losses([1, 1], [low, high], loss=loss)  # type: ignore[arg-type]
    zeros = compute_losses([0, 0], [low, high], loss=loss)  # type: ignore[arg-type]
    assert ones[1] <= ones[0]
    assert zeros[0] <= zeros[1]


def test_confident_wrong_predictions_have_high_loss() -> None:
    y = np.array([1, 0, 1, 0])
    p = np.array([0.99, 0.01, 0.01, 0.99])  # two confident right, two confident wrong
    for loss in ("logit", "cross_entropy"):
        values = compute_losses(y, p, loss=loss)
        assert max(values[:2]) < min(values[2:])
    logits = np.array([[5.0, 0.0, 0.0], [5.0, 0.0, 0.0]])
    right, wrong = multiclass_logit_loss_from_logits([0, 1], logits)
    assert right < 0 < wrong


# ------------------------------------------------------------------------ dispatcher, output


def test_dispatcher_routes_to_the_named_functions() -> None:
    rng = np.random.default_rng(3)
    z = rng.normal(size=(7, 4))
    p = softmax(z, axis=1)
    y = rng.integers(0, 4, size=7)
    zb = rng.normal(size=7)
    yb = rng.integers(0, 2, size=7)
    cases = [
        (compute_losses(y, p), multiclass_logit_loss_from_probabilities(y, p)),
        (compute_losses(y, z, outputs="logits"), multiclass_logit_loss_from_logits(y, z)),
        (
            compute_losses(y, p, loss="cross_entropy"),
            multiclass_cross_entropy_from_probabilities(y, p),
        ),
        (
            compute_losses(y, z, loss="cross_entropy", outputs="logits"),
            multiclass_cross_entropy_from_logits(y, z),
        ),
        (compute_losses(yb, expit(zb)), binary_logit_loss_from_probabilities(yb, expit(zb))),
        (compute_losses(yb, zb, outputs="logits"), binary_logit_loss_from_logits(yb, zb)),
    ]
    for got, expected in cases:
        np.testing.assert_array_equal(got, expected)


def test_accepted_label_and_prediction_forms() -> None:
    expected = compute_losses([0, 1, 1], [0.2, 0.6, 0.9])
    np.testing.assert_array_equal(compute_losses([0.0, 1.0, 1.0], [0.2, 0.6, 0.9]), expected)
    np.testing.assert_array_equal(compute_losses([False, True, True], [0.2, 0.6, 0.9]), expected)
    np.testing.assert_array_equal(
        compute_losses(np.array([[0], [1], [1]], dtype=np.uint8), [[0.2], [0.6], [0.9]]), expected
    )
    np.testing.assert_allclose(
        compute_losses([0, 1, 1], np.array([0.2, 0.6, 0.9], dtype=np.float32)), expected, rtol=1e-6
    )
    # Float32 softmax rows are off 1 by ~1e-7 and are accepted.
    rows = softmax(np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 9.0]]), axis=1).astype(np.float32)
    assert compute_losses([2, 1], rows).shape == (2,)


def test_inputs_are_not_modified_and_output_is_fresh() -> None:
    p = np.array([[0.0, 1.0], [0.3, 0.7]])
    z = np.array([[1.0, 2.0], [3.0, -4.0]])
    y = np.array([1, 0])
    p_before, z_before = p.copy(), z.copy()
    out = compute_losses(y, p)
    compute_losses(y, z, outputs="logits")
    np.testing.assert_array_equal(p, p_before)
    np.testing.assert_array_equal(z, z_before)
    assert out.flags.c_contiguous
    assert out.flags.writeable
    assert out.dtype == np.float64


# ------------------------------------------------------------------------------ bad input


def raises(message: str) -> Any:
    return pytest.raises(InvalidInputError, match=re.escape(message))


@pytest.mark.parametrize(
    ("predictions", "message"),
    [
        ([0.5, 1.5, 0.2], "1 value(s) are not, the first at index 1. Found 1.5."),
        ([0.5, -0.1, -0.2], "2 value(s) are not, the first at index 1. Found -0.1."),
        ([np.nan, 0.5, 0.5], "1 value(s) are not, the first at index 0. Found nan."),
        ([0.5, 0.5, np.inf], "1 value(s) are not, the first at index 2. Found inf."),
        (
            [[0.5, 0.5], [0.2, 0.8], [-np.inf, 1.0]],
            "1 value(s) are not, the first at row 2, column 0. Found -inf.",
        ),
    ],
)
def test_invalid_probabilities(predictions: Any, message: str) -> None:
    with raises("predictions must be probabilities in [0, 1]; " + message):
        compute_losses([0, 1, 1], predictions)


def test_rows_not_summing_to_one() -> None:
    rows = [[0.2, 0.3, 0.5], [0.2, 0.3, 0.6], [0.5, 0.5, 0.5], [0.3, 0.3, 0.4]]
    with raises("2 row(s) do not, the worst is row 2. Found sum 1.5."):
        compute_losses([0, 1, 2, 0], rows)
    with raises("within 0.001"):
        binary_logit_loss_from_probabilities([0], [[0.5, 0.4]])
    # The same rows are valid logits.
    assert compute_losses([0, 1, 2, 0], rows, outputs="logits").shape == (4,)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_logits(bad: float) -> None:
    with raises(
        f"predictions must be finite logits; 1 value(s) are not, the first at index 1. Found {bad}."
    ):
        compute_losses([0, 1], [0.5, bad], outputs="logits")
    with raises(f"the first at row 1, column 2. Found {bad}."):
        multiclass_cross_entropy_from_logits([0, 1], [[0.0, 1.0, 2.0], [0.0, 1.0, bad]])


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        (
            [0, 0.5, 1],
            "labels must be whole numbers; 1 value(s) are not, the first at index 1. Found 0.5.",
        ),
        (
            [0, 1, np.nan],
            "labels must be whole numbers; 1 value(s) are not, the first at index 2. Found nan.",
        ),
        ([0, 1, 2], "labels must be 0 or 1; 1 value(s) are not, the first at index 2. Found 2."),
        ([-1, 1, 3], "labels must be 0 or 1; 2 value(s) are not, the first at index 0. Found -1."),
        (
            [0.0, 1.0, 2.0],
            "labels must be 0 or 1; 1 value(s) are not, the first at index 2. Found 2.0.",
        ),
    ],
)
def test_invalid_binary_labels(labels: Any, message: str) -> None:
    with raises(message):
        compute_losses(labels, [0.1, 0.5, 0.9])


def test_invalid_multiclass_labels() -> None:
    rows = np.full((3, 4), 0.25)
    with raises(
        "labels must be class indices 0 … 3; 1 value(s) are not, the first at index 1. Found 4."
    ):
        compute_losses([0, 4, 3], rows)
    with raises("class indices 0 … 3; 1 value(s) are not, the first at index 2. Found -1."):
        compute_losses([0, 1, -1], np.zeros((3, 4)), outputs="logits")


def test_length_mismatch() -> None:
    with raises("same number of records. Found 2 labels and 3 predictions."):
        compute_losses([0, 1], [0.1, 0.2, 0.3])
    with raises("Found 4 labels and 2 predictions."):
        multiclass_logit_loss_from_logits([0, 1, 2, 0], np.zeros((2, 3)))


def test_empty_inputs() -> None:
    with pytest.raises(
        InsufficientDataError, match=re.escape("predictions needs at least 1 record. Found 0.")
    ):
        compute_losses([], [])
    with pytest.raises(
        InsufficientDataError, match=re.escape("predictions needs at least 1 record. Found 0.")
    ):
        compute_losses([], np.zeros((0, 3)), outputs="logits")
    with pytest.raises(
        InsufficientDataError, match=re.escape("labels needs at least 1 value. Found 0.")
    ):
        compute_losses([], [0.5])
    assert issubclass(InsufficientDataError, InvalidInputError)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: compute_losses([0], [0.5], loss="hinge"),
            "loss must be 'logit' or 'cross_entropy'. Found 'hinge'.",
        ),
        (
            lambda: compute_losses([0], [0.5], outputs="scores"),
            "outputs must be 'probabilities' or 'logits'. Found 'scores'.",
        ),
        (
            lambda: compute_losses([0], 0.5),
            "a 2-D array with one row per record. Found shape ().",
        ),
        (lambda: compute_losses([0], np.zeros((1, 2, 2))), "Found shape (1, 2, 2)."),
        (
            lambda: compute_losses([0], np.zeros((1, 0))),
            "predictions must have at least 1 column. Found shape (1, 0).",
        ),
        (lambda: compute_losses(["a"], [0.5]), "labels must be numeric. Found dtype <U1."),
        (lambda: compute_losses([0], ["0.5"]), "predictions must be numeric. Found dtype <U3."),
        (
            lambda: compute_losses([0], [[0.5], [0.5, 0.5]]),
            "predictions must be numeric. Found list.",
        ),
        (
            lambda: compute_losses([[0, 1], [1, 0]], np.full((2, 2), 0.5)),
            "labels must be one-dimensional. Found shape (2, 2).",
        ),
        (
            lambda: binary_logit_loss_from_logits([0], np.zeros((1, 3))),
            "binary model must be 1-D or have one or two columns. Found shape (1, 3).",
        ),
        (
            lambda: multiclass_logit_loss_from_probabilities([0], [0.5]),
            "multi-class model must be 2-D with at least 2 columns. Found shape (1,).",
        ),
        (
            lambda: multiclass_cross_entropy_from_logits([0], [[0.5]]),
            "multi-class model must be 2-D with at least 2 columns. Found shape (1, 1).",
        ),
    ],
)
def test_other_invalid_arguments(call: Any, message: str) -> None:
    with raises(message):
        call()


def test_overflowing_logits() -> None:
    with raises("losses must be finite (logits too far apart for float64); 1 value(s) are not"):
        compute_losses([0, 0], [[1e308, -1e308], [0.0, 1.0]], outputs="logits")


def test_errors_are_value_errors() -> None:
    with pytest.raises(ValueError, match="Found 7"):
        compute_losses([7], [0.5])
