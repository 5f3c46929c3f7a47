"""Features.matrix and the array a numeric model receives, against a column-by-column copy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from epsstar.audit.model.features import Features
from loaders import BatchedModel

KINDS = [np.uint8, np.int16, np.int64, np.bool_, np.float32, np.float64]


def _reference(features: Features, dtype: type[np.generic]) -> np.ndarray:
    out = np.empty((features.rows, features.width), dtype=dtype)
    for j, column in enumerate(features.columns):
        out[:, j] = column
    return out


def _columns(kinds: list[int], rows: int, seed: int) -> Features:
    rng = np.random.default_rng(seed)
    columns = [
        (rng.normal(size=rows) * 1e3).astype(KINDS[k])
        if np.dtype(KINDS[k]).kind == "f"
        else rng.integers(0, 2 if KINDS[k] is np.bool_ else 200, rows).astype(KINDS[k])
        for k in kinds
    ]
    return Features(tuple(f"c{j}" for j in range(len(columns))), tuple(columns))


@settings(max_examples=40, deadline=None)
@given(
    kinds=st.lists(st.integers(0, len(KINDS) - 1), min_size=1, max_size=8),
    same=st.booleans(),
    rows=st.integers(1, 40),
    seed=st.integers(0, 2**32 - 1),
    dtype=st.sampled_from([None, np.float32, np.float64, np.int64]),
)
def test_the_matrix_holds_each_column_cast_as_a_column_copy_would(
    kinds: list[int], same: bool, rows: int, seed: int, dtype: type[np.generic] | None
) -> None:
    # Exact equality: stacking narrow columns before the cast must not change a value.
    features = _columns([kinds[0]] * len(kinds) if same else kinds, rows, seed)
    matrix = features.matrix(dtype)
    expected_dtype = dtype or (
        np.float32 if all(c.dtype == np.float32 for c in features.columns) else np.float64
    )
    assert matrix.dtype == np.dtype(expected_dtype)
    assert matrix.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(matrix, _reference(features, expected_dtype))


class _Echo(BatchedModel):
    """Returns what it was handed, to see the prepared array itself."""

    seen: list[np.ndarray]

    def _run_batch(self, batch: np.ndarray) -> np.ndarray:
        self.seen.append(batch)
        return np.full(batch.shape[0], 0.5)


@pytest.mark.parametrize("kind", [np.uint8, np.int16, np.bool_, np.float32, np.float64])
def test_a_float32_model_receives_the_same_array_from_any_column_type(
    kind: type[np.generic],
) -> None:
    model = _Echo(
        Path("echo.onnx"),
        n_features=3,
        classes=None,
        outputs="probabilities",
        input_dtype=np.float32,
    )
    model.seen = []
    values = np.array([[0, 1, 1], [1, 0, 1]])
    model.predict(Features(("a", "b", "c"), tuple(values[:, j].astype(kind) for j in range(3))))
    prepared = model.seen[-1]
    assert prepared.dtype == np.float32
    assert prepared.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(prepared, values.astype(np.float32))


def test_values_beyond_float32_are_still_refused_and_nan_still_passes() -> None:
    from epsstar.exceptions import InvalidInputError

    model = _Echo(
        Path("echo.onnx"),
        n_features=2,
        classes=None,
        outputs="probabilities",
        input_dtype=np.float32,
    )
    model.seen = []
    model.predict(np.array([[np.nan, 1.0], [-np.inf, 3e38]]))
    with pytest.raises(InvalidInputError, match="must fit float32"):
        model.predict(np.array([[np.nan, 1.0], [-1e39, 0.0]]))


def test_models_reading_one_batch_stack_its_narrow_columns_once_and_keep_their_own_arrays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The target and the reference models handed one batch (renamed for one of them) share
    its column-to-row stacking; each is handed an array of its own, so a model that writes
    into its input leaves the next model's alone."""
    stackings: list[int] = []
    stack = np.stack

    def counted(arrays: object, *args: object, **kwargs: object) -> np.ndarray:
        stackings.append(1)
        return stack(arrays, *args, **kwargs)  # type: ignore[call-overload,no-any-return]

    monkeypatch.setattr(np, "stack", counted)
    values = np.array([[0, 1, 7], [1, 0, 9]])
    batch = Features(("a", "b", "c"), tuple(values[:, j].astype(np.uint8) for j in range(3)))
    for handed in (batch, batch, batch.rename(["x", "y", "z"])):
        model = _Echo(
            Path("echo.onnx"),
            n_features=3,
            classes=None,
            outputs="probabilities",
            input_dtype=np.float32,
        )
        model.seen = []
        model.predict(handed)
        # what the model before wrote into its array did not reach this one
        np.testing.assert_array_equal(model.seen[-1], values.astype(np.float32))
        model.seen[-1][:] = -1.0
    assert len(stackings) == 1
    fresh = batch.matrix(np.float32)
    np.testing.assert_array_equal(fresh, values.astype(np.float32))
    assert batch.slice(0, 2) is batch
    np.testing.assert_array_equal(batch.slice(1, 2).matrix(np.float64), values[1:].astype(float))
