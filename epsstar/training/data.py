"""Numeric feature tables with a label column, read from CSV, Parquet or NPZ.

Every column other than the label is a feature unless ``features`` names them;
features must be numeric (booleans count) and finite. Labels of any type are
mapped to 0..K−1 in sorted order of their values; the mapping is kept so that a
population table is encoded the same way and so that ``training.json`` can
record it.

NPZ files hold either arrays ``X`` (2-D) plus a 1-D label array named by
``label_column``, or one 1-D array per column.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from epsstar.exceptions import InputFileError, InsufficientDataError, InvalidInputError

__all__ = ["TabularData", "encode_labels", "load_table", "read_frame"]

_SUFFIXES = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".npz": "npz"}


@dataclass(frozen=True, slots=True)
class TabularData:
    """A feature matrix with labels encoded as 0..K−1.

    ``classes[k]`` is the original label value (as text) of class ``k``.
    """

    features: NDArray[np.float64]
    labels: NDArray[np.int64]
    feature_names: tuple[str, ...]
    classes: tuple[str, ...]
    label_column: str
    source: str

    @property
    def n_records(self) -> int:
        return int(self.features.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.features.shape[1])

    @property
    def n_classes(self) -> int:
        return len(self.classes)


def _format_of(path: Path) -> str:
    kind = _SUFFIXES.get(path.suffix.lower())
    if kind is None:
        allowed = ", ".join(sorted(_SUFFIXES))
        raise InputFileError(f"data file must end in one of {allowed}. Found {str(path)!r}.")
    return kind


def _read_npz(path: Path, label_column: str) -> pd.DataFrame:
    with np.load(path, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    if "X" in arrays and arrays["X"].ndim == 2 and label_column in arrays:
        matrix = arrays["X"]
        labels = arrays[label_column].reshape(-1)
        if labels.shape[0] != matrix.shape[0]:
            raise InputFileError(
                f"{path}: array {label_column!r} must have one entry per row of X "
                f"({matrix.shape[0]}). Found {labels.shape[0]}."
            )
        frame = pd.DataFrame(matrix, columns=[f"x{j}" for j in range(matrix.shape[1])])
        frame[label_column] = labels
        return frame
    lengths = {name: array.shape for name, array in arrays.items()}
    if not arrays or any(len(shape) != 1 for shape in lengths.values()):
        raise InputFileError(
            f"{path}: an NPZ file must hold a 2-D array 'X' plus a label array, or one 1-D "
            f"array per column. Found arrays {lengths}."
        )
    if len({shape[0] for shape in lengths.values()}) != 1:
        raise InputFileError(f"{path}: the 1-D arrays differ in length. Found {lengths}.")
    return pd.DataFrame(arrays)


def read_frame(path: str | os.PathLike[str], label_column: str) -> pd.DataFrame:
    """Read a table into a DataFrame; file problems raise :class:`InputFileError`."""
    location = Path(path)
    kind = _format_of(location)
    if not location.is_file():
        raise InputFileError(f"data file does not exist or is not a file. Found {str(path)!r}.")
    try:
        if kind == "csv":
            return pd.read_csv(location)
        if kind == "parquet":
            return pd.read_parquet(location)
        return _read_npz(location, label_column)
    except InputFileError:
        raise
    except Exception as error:  # every reader has its own error types
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise InputFileError(f"could not read {str(path)!r}: {message}") from None


def encode_labels(
    values: pd.Series[Any], classes: Sequence[str] | None, source: str
) -> tuple[NDArray[np.int64], tuple[str, ...]]:
    """Map labels to 0..K−1; with ``classes`` given, unseen labels are an error."""
    if values.isna().any():
        row = int(np.flatnonzero(values.isna().to_numpy())[0])
        raise InvalidInputError(f"{source}: the label column has a missing value at row {row}.")
    raw = values.to_numpy()
    if np.issubdtype(raw.dtype, np.floating) and np.all(raw == np.round(raw)):
        raw = raw.astype(np.int64)
    text = np.array([str(value) for value in raw], dtype=object)
    if classes is None:
        unique = np.unique(raw)
        classes = tuple(str(value) for value in unique)
    lookup = {name: index for index, name in enumerate(classes)}
    codes = np.empty(len(text), dtype=np.int64)
    for row, label in enumerate(text):
        code = lookup.get(label)
        if code is None:
            raise InvalidInputError(
                f"{source}: label {label!r} at row {row} does not occur in the training data "
                f"(classes {list(classes)})."
            )
        codes[row] = code
    return codes, tuple(classes)


def load_table(
    path: str | os.PathLike[str],
    label_column: str,
    *,
    features: Sequence[str] | None = None,
    classes: Sequence[str] | None = None,
) -> TabularData:
    """Read a numeric feature table with a label column.

    ``features`` selects and orders the feature columns (default: every other
    column, in file order). Pass the training data's ``classes`` and
    ``feature_names`` when reading population data so both are encoded alike.
    """
    source = str(path)
    frame = read_frame(path, label_column)
    if label_column not in frame.columns:
        shown = ", ".join(repr(str(name)) for name in list(frame.columns)[:10])
        raise InvalidInputError(
            f"{source}: label column {label_column!r} not found. Found columns {shown}"
            f"{', ...' if frame.shape[1] > 10 else ''}."
        )
    if features is None:
        names = [str(name) for name in frame.columns if name != label_column]
    else:
        names = [str(name) for name in features]
        missing = [name for name in names if name not in frame.columns]
        if missing:
            raise InvalidInputError(f"{source}: feature column {missing[0]!r} not found.")
        if label_column in names:
            raise InvalidInputError(
                f"{source}: the label column {label_column!r} cannot also be a feature."
            )
    if not names:
        raise InvalidInputError(f"{source}: no feature columns besides {label_column!r}.")
    if frame.shape[0] == 0:
        raise InsufficientDataError(f"{source}: the table has no rows.")
    for name in names:
        column = frame[name]
        if not (pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column)):
            raise InvalidInputError(
                f"{source}: feature column {name!r} must be numeric. Found dtype {column.dtype}."
            )
    matrix = frame[names].to_numpy(dtype=np.float64)
    bad = ~np.isfinite(matrix)
    if bad.any():
        row, col = (int(i) for i in np.argwhere(bad)[0])
        raise InvalidInputError(
            f"{source}: feature column {names[col]!r} must be finite. Found {matrix[row, col]} "
            f"at row {row}."
        )
    codes, encoded = encode_labels(frame[label_column], classes, source)
    return TabularData(
        features=np.ascontiguousarray(matrix),
        labels=codes,
        feature_names=tuple(names),
        classes=encoded,
        label_column=label_column,
        source=source,
    )
