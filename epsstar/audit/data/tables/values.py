"""The checks of the values read: feature columns typed and finite (or kept missing), within
the model's input type, labels present in every row, and the columns selected."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.data.tables.shared import TableSchema, _clipped, _shown
from epsstar.audit.model.features import Features
from epsstar.exceptions import InputFileError, InvalidInputError


def _numeric_column(
    path: Path,
    name: str,
    values: NDArray[Any],
    row0: int,
    dtype: type[np.floating[Any]],
    what: str = "feature column",
) -> NDArray[Any]:
    """The values of one column as numbers (numeric text counts), or an error naming the row."""
    kind = values.dtype.kind
    if kind in "biuf":
        return values
    if kind in "OUS":
        import pandas as pd

        raw = pd.Series(values, copy=False)
        numbers = pd.to_numeric(raw, errors="coerce")
        bad = (numbers.isna() & raw.notna()).to_numpy()
        if not bad.any():
            return numbers.to_numpy(dtype=dtype, na_value=np.nan)
        first = int(np.flatnonzero(bad)[0])
        found = values[first]
    else:
        first, found = 0, values[0] if len(values) else values.dtype
    if isinstance(found, bytes):
        found = found.decode(errors="replace")
    if isinstance(found, np.generic):
        found = found.item()
    raise InvalidInputError(
        f"{path}: {what} {name!r} must be numeric. Found {_clipped(found)} at row {row0 + first}."
    )


def _check_finite(
    path: Path, names: Sequence[str], matrix: NDArray[Any], row0: int, what: str
) -> None:
    """Refuse NaN and infinity, naming the column, the row and the value."""
    finite = np.isfinite(matrix)
    if not finite.all():
        row, col = (int(i) for i in np.argwhere(~finite)[0])
        raise InvalidInputError(
            f"{path}: {what} {names[col]!r} must be finite. Found {matrix[row, col]} at "
            f"row {row0 + row}."
        )


def _typed_column(
    path: Path, name: str, values: NDArray[Any], row0: int, text: bool = True, missing: bool = False
) -> NDArray[Any]:
    """One feature column with its type kept: numbers and booleans as stored (numeric text
    as float64), other text as an object array of ``str`` (refused, naming the first value
    that is not a number, when ``text`` is false); NaN, infinity and missing text are
    refused, naming the row, except that with ``missing`` NaN and missing text are kept
    as NaN."""
    kind = values.dtype.kind
    if kind == "S":
        values = np.char.decode(values, "utf-8", errors="replace")
        kind = values.dtype.kind
    if kind in "OU":
        import pandas as pd

        raw = pd.Series(values, copy=False)
        absent = raw.isna().to_numpy()
        if absent.any() and not missing:
            first = int(np.flatnonzero(absent)[0])
            raise InvalidInputError(
                f"{path}: feature column {name!r} must have a value in every row. Found "
                f"{values[first]} at row {row0 + first}."
            )
        odd = [
            i
            for i, v in enumerate(values)
            if not (absent[i] or isinstance(v, (str, int, float, bool)))
        ]
        if odd:
            raise InvalidInputError(
                f"{path}: feature column {name!r} must hold numbers, booleans or text. Found "
                f"{_clipped(values[odd[0]])} at row {row0 + odd[0]}."
            )
        if not text:
            values = _numeric_column(path, name, values, row0, np.float64)
        else:
            numbers = pd.to_numeric(raw, errors="coerce")
            if (numbers.isna().to_numpy() & ~absent).any():
                kept = [np.nan if gone else str(v) for v, gone in zip(values, absent, strict=True)]
                return np.asarray(kept, dtype=object)
            values = numbers.to_numpy(dtype=np.float64, na_value=np.nan)
    elif kind not in "biuf":
        raise InvalidInputError(
            f"{path}: feature column {name!r} must hold numbers, booleans or text. Found "
            f"dtype {values.dtype} at row {row0}."
        )
    if values.dtype.kind == "f":
        finite = np.isfinite(values) | (missing & np.isnan(values))
        if not finite.all():
            first = np.argwhere(~finite)[0]
            raise InvalidInputError(
                f"{path}: feature column {name!r} must be finite. Found {values[tuple(first)]} at "
                f"row {row0 + int(first[0])}."
            )
    return values


def _feature_columns(
    path: Path,
    names: Sequence[str],
    columns: Sequence[NDArray[Any]],
    row0: int,
    target: np.dtype[Any] | None = None,
    text: bool = True,
    missing: bool = False,
) -> Features:
    typed = tuple(
        _typed_column(path, name, values, row0, text, missing)
        for name, values in zip(names, columns, strict=True)
    )
    if target is not None:
        for name, values in zip(names, typed, strict=True):
            # a value of a type the target holds exactly cannot leave its range
            if values.dtype.kind in "biuf" and not np.can_cast(values.dtype, target, "safe"):
                flat = values.reshape(len(values), -1)
                _check_fits(path, [name] * flat.shape[1], flat, row0, target)
    return Features(tuple(names), typed)


def _check_fits(
    path: Path, names: Sequence[str], matrix: NDArray[Any], row0: int, target: np.dtype[Any]
) -> None:
    """Refuse values beyond the range of the model's input type (1e39 is infinite in float32)."""
    if target.kind == "f":
        low, high = -float(np.finfo(target).max), float(np.finfo(target).max)
        above = matrix > high
    elif target.kind in "iu":
        low, high = float(np.iinfo(target).min), float(np.iinfo(target).max)
        above = matrix >= high + 1.0  # float(2**63 - 1) rounds up to 2**63, out of range
    else:
        return
    outside = above | (matrix < low)
    if outside.any():
        row, col = (int(i) for i in np.argwhere(outside)[0])
        raise InvalidInputError(
            f"{path}: feature column {names[col]!r} must fit the model's input type {target} "
            f"(from {low:g} to {high:g}). Found {matrix[row, col]} at row {row0 + row}."
        )


def refuse_nested(path: str | os.PathLike[str], what: str, values: NDArray[Any], row0: int) -> None:
    """Refuse values that are lists, tables or arrays (a Parquet list, struct or map column):
    they name no class and no slice. ``what`` names the column (``label column 'y'``)."""
    if values.dtype.kind != "O":
        return
    for index, value in enumerate(values):
        if isinstance(value, list | tuple | dict | np.ndarray):
            raise InvalidInputError(
                f"{path}: {what} must hold one number, boolean or text per row, not lists or "
                f"tables. Found {_clipped(value)} at row {row0 + index}."
            )


def _label_vector(path: Path, name: str, values: NDArray[Any], row0: int) -> NDArray[Any]:
    refuse_nested(path, f"label column {name!r}", values, row0)
    kind = values.dtype.kind
    if kind in "iu":
        return values.astype(np.int64, copy=False)
    if kind == "b":
        return values.astype(np.bool_, copy=False)
    if kind == "f":
        labels = values.astype(np.float64, copy=False)
        missing = np.isnan(labels)
    else:
        if kind == "S":
            values = np.char.decode(values, "utf-8", errors="replace")
        labels = values.astype(object, copy=False)
        import pandas as pd

        missing = np.asarray(pd.isna(labels), dtype=bool)
    if missing.any():
        first = int(np.flatnonzero(missing)[0])
        raise InvalidInputError(
            f"{path}: label column {name!r} must have a value in every row. Found "
            f"{labels[first]} at row {row0 + first}."
        )
    return labels


def _select(schema: TableSchema, label_column: str, features: Sequence[str] | None) -> list[str]:
    path, available = schema.path, schema.columns
    if label_column not in available:
        raise InputFileError(
            f"{path}: label column {label_column!r} must be one of its columns. Found "
            f"columns {_shown(available)}."
        )
    if features is None:
        names = [name for name in available if name != label_column]
    else:
        if isinstance(features, str):
            raise InvalidInputError(
                f"features must be a sequence of column names. Found the string {features!r}."
            )
        names = [str(name) for name in features]
        missing = [name for name in names if name not in available]
        if missing:
            raise InputFileError(
                f"{path}: feature column {missing[0]!r} must be one of its columns. "
                f"Found columns {_shown(available)}."
            )
        if label_column in names:
            raise InvalidInputError(
                f"{path}: the label column {label_column!r} must not also be a feature. "
                f"Found it in features."
            )
        repeated = [name for name in names if names.count(name) > 1]
        if repeated:
            raise InvalidInputError(
                f"features must name each column once. Found {repeated[0]!r} twice."
            )
    if not names:
        raise InvalidInputError(
            f"{path}: at least one feature column is needed besides {label_column!r}. Found none."
        )
    return names
