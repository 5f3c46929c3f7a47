"""One column of a table: streamed as stored, or read as finite numbers (a file of values
such as per-record losses)."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.data.tables.array_files import _ArrayFile
from epsstar.audit.data.tables.formats import _chunks, _locate, read_schema
from epsstar.audit.data.tables.shared import TableSchema, _shown
from epsstar.audit.data.tables.values import _check_finite, _numeric_column
from epsstar.exceptions import InputFileError, InsufficientDataError, InvalidInputError


def iter_column(
    path: str | os.PathLike[str], name: str, *, batch_size: int = 1 << 20, separator: str = ","
) -> Iterator[NDArray[Any]]:
    """The values of the column ``name`` as stored, in chunks of at most ``batch_size`` rows
    (``separator``: a CSV file's field separator).

    The file and the column are checked now, before the first chunk is asked for.
    """
    schema = read_schema(path, separator=separator)
    if name not in schema.columns:
        raise InputFileError(
            f"{schema.path}: column {name!r} must be one of its columns. Found columns "
            f"{_shown(schema.columns)}."
        )
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidInputError(f"batch_size must be an integer ≥ 1. Found {batch_size!r}.")
    return (chunk[0] for chunk in _chunks(schema, [name], batch_size))


def _only_column(schema: TableSchema) -> str:
    columns = schema.columns
    if len(columns) != 1:
        raise InputFileError(
            f"{schema.path}: a file of values must have exactly one column. Found "
            f"{len(columns)}: {_shown(columns, 5)}."
        )
    return columns[0]


def _is_number(text: str) -> bool:
    try:
        return not math.isnan(float(text))
    except ValueError:
        return False


def _npy_column(file: Path) -> NDArray[Any]:
    """The values of a .npy file holding a 1-D array or one column."""
    with _ArrayFile(file, "npy") as arrays:
        source = arrays.sources[""]
        shape = source.info.shape
        if len(shape) not in (1, 2) or (len(shape) == 2 and shape[1] != 1):
            raise InputFileError(
                f"{file}: a file of values must hold a 1-D array or one column. "
                f"Found shape {shape}."
            )
        return source.read(0, shape[0]).reshape(-1)


def read_column(path: str | os.PathLike[str], *, name: str = "values") -> NDArray[np.float64]:
    """The numbers of a one-column table (such as per-record losses), as finite float64.

    Any format of this module: a ``.npy`` file holds a 1-D array (or one column); a CSV
    file's header line is optional (a first line that is a number is data); Parquet and
    NPZ files hold one column. ``name`` names the argument in the messages about the
    path itself.
    """
    file, kind = _locate(path, name)
    if kind == "npy":
        label, chunks = "0", iter([[_npy_column(file)]])
    else:
        schema = read_schema(file)
        first = _only_column(schema)
        header = not (kind == "csv" and _is_number(first))
        chunks = _chunks(schema, [first], 1 << 20, header=header)
        label = first if header else "0"
    parts: list[NDArray[np.float64]] = []
    row0 = 0
    for (values,) in chunks:
        column = _numeric_column(file, label, values, row0, np.float64, "column")
        _check_finite(file, [label], column.reshape(-1, 1), row0, "column")
        parts.append(np.asarray(column, dtype=np.float64))
        row0 += len(column)
    if row0 == 0:
        raise InsufficientDataError(f"{file}: must hold at least one row. Found none.")
    return np.concatenate(parts)
