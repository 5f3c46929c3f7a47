"""Each data file read by the reader of its format, which its suffix names."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from numpy.typing import NDArray

from epsstar.audit.data.tables.array_files import _array_chunks, _array_layout, _ArrayFile
from epsstar.audit.data.tables.csv_files import (
    _csv_chunks,
    _csv_columns,
    _csv_header,
    _not_utf8,
    check_separator,
)
from epsstar.audit.data.tables.parquet_files import _open_parquet, _parquet_chunks, parquet_columns
from epsstar.audit.data.tables.shared import MAX_COLUMNS, TableSchema, _check_unique, _unreadable
from epsstar.exceptions import InputFileError

DATA_FILE_SUFFIXES: dict[str, str] = {
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".npz": "npz",
    ".npy": "npy",
}


def _locate(path: str | os.PathLike[str], what: str = "data file") -> tuple[Path, str]:
    file = Path(path)
    kind = DATA_FILE_SUFFIXES.get(file.suffix.lower())
    if kind is None:
        allowed = ", ".join(DATA_FILE_SUFFIXES)
        raise InputFileError(f"{what} must end in one of {allowed}. Found {str(file)!r}.")
    if not file.is_file():
        if file.is_dir():
            raise InputFileError(f"{what} must be a file, not a directory. Found {str(file)!r}.")
        raise InputFileError(f"{what} must exist and be a file. Found {str(file)!r}.")
    return file, kind


def read_schema(path: str | os.PathLike[str], *, separator: str = ",") -> TableSchema:
    """The format, column names and (except for CSV) row count of a data file; a CSV
    file's fields are separated by ``separator``."""
    file, kind = _locate(path)
    if kind == "csv":
        separator = check_separator(separator)
        names = _csv_columns(file, separator)
        unnamed = len(names) > 1 and _csv_header(file, separator)[0] == ""
        schema = TableSchema(file, kind, names[unnamed:], None, separator, unnamed)
    elif kind == "parquet":
        with _open_parquet(file) as parquet:
            names = parquet_columns(parquet.schema_arrow)
            schema = TableSchema(file, kind, names, int(parquet.metadata.num_rows))
    else:
        with _ArrayFile(file, kind) as arrays:
            layout = _array_layout(arrays)
            columns = tuple(layout.columns)
            return TableSchema(file, kind, columns, layout.n_rows, unnamed=layout.unnamed)
    if len(schema.columns) > MAX_COLUMNS:
        raise InputFileError(
            f"{file}: must have at most {MAX_COLUMNS} columns. Found {len(schema.columns)}."
        )
    _check_unique(file, schema.columns)
    return schema


def count_rows(path: str | os.PathLike[str], *, separator: str = ",") -> int:
    """The number of data rows: from metadata for Parquet, NPZ and NPY; by streaming for CSV."""
    schema = read_schema(path, separator=separator)
    if schema.n_rows is not None:
        return schema.n_rows
    import pandas as pd

    total = 0
    try:
        with pd.read_csv(
            schema.path, usecols=[0], dtype=str, chunksize=1 << 20, sep=schema.separator
        ) as reader:
            for frame in reader:
                total += len(frame)
    except UnicodeDecodeError as error:
        raise _not_utf8(schema.path, error) from None
    except (pd.errors.ParserError, OSError, ValueError) as error:
        raise _unreadable(schema.path, "csv", error) from None
    return total


def _chunks(
    schema: TableSchema, selected: Sequence[str], size: int, *, header: bool = True
) -> Iterator[list[NDArray[Any]]]:
    """The raw values of the ``selected`` columns, in chunks of at most ``size`` rows."""
    if schema.format == "csv":
        return _csv_chunks(
            schema.path,
            schema.columns,
            selected,
            size,
            header=header,
            separator=schema.separator,
            skip=int(schema.csv_index),
        )
    if schema.format == "parquet":
        return _parquet_chunks(schema.path, selected, size)
    return _array_chunks(schema.path, schema.format, selected, size)
