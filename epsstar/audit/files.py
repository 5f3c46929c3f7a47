"""Reading loss files and writing outputs atomically.

Loss files hold one number per record: ``.npy`` (a 1-D array, or one column),
``.csv`` (one column, with or without a header line) or ``.parquet`` (one
column). Outputs are written to a temporary file in the target directory and
moved into place with :func:`os.replace`, so a reader never sees half a file
and a failed run leaves no file behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from epsstar.exceptions import InputFileError
from epsstar.statistics._validation import FloatArray, finite_vector

__all__ = ["LOSS_FILE_SUFFIXES", "atomic_write_bytes", "atomic_write_json", "read_loss_file"]

LOSS_FILE_SUFFIXES = (".npy", ".csv", ".parquet")


def _single_column(path: Path, columns: list[str]) -> None:
    if len(columns) != 1:
        shown = ", ".join(str(c) for c in columns[:5]) + (", ..." if len(columns) > 5 else "")
        raise InputFileError(
            f"{path}: a loss file must have exactly one column. Found {len(columns)}: {shown}."
        )


def _read_csv(path: Path) -> FloatArray:
    import pandas as pd

    try:
        frame = pd.read_csv(path, header=None, dtype=str, skip_blank_lines=True)
    except pd.errors.EmptyDataError:
        raise InputFileError(f"{path}: the file is empty.") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as error:
        raise InputFileError(f"{path}: not a readable CSV file ({str(error).strip()}).") from None
    _single_column(path, [str(c) for c in frame.columns])
    text = frame.iloc[:, 0].str.strip()
    numbers = pd.to_numeric(text, errors="coerce")
    # A first line that is not a number is a header.
    if len(numbers) and np.isnan(numbers.iloc[0]):
        text, numbers = text.iloc[1:], numbers.iloc[1:]
    bad = numbers.isna().to_numpy()
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        raise InputFileError(
            f"{path}: every value must be a number; {int(bad.sum())} are not, the first on data "
            f"row {first + 1}. Found {text.iloc[first]!r}."
        )
    return numbers.to_numpy(dtype=np.float64)


def _read_parquet(path: Path) -> FloatArray:
    import pyarrow.lib
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pyarrow.lib.ArrowException, OSError) as error:
        raise InputFileError(f"{path}: not a readable Parquet file ({error}).") from None
    _single_column(path, table.column_names)
    column = table.column(0)
    try:
        return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)
    except (TypeError, ValueError):
        raise InputFileError(
            f"{path}: the column must be numeric. Found type {column.type}."
        ) from None


def _read_npy(path: Path) -> FloatArray:
    try:
        array = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as error:
        raise InputFileError(f"{path}: not a readable .npy file ({error}).") from None
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim != 1:
        raise InputFileError(
            f"{path}: a loss file must hold a 1-D array. Found shape {array.shape}."
        )
    if not np.issubdtype(array.dtype, np.number) or np.iscomplexobj(array):
        raise InputFileError(f"{path}: the array must be real numbers. Found dtype {array.dtype}.")
    return np.asarray(array, dtype=np.float64)


def read_loss_file(path: str | os.PathLike[str], *, name: str = "losses") -> FloatArray:
    """Per-record losses from a .npy, one-column .csv or one-column .parquet file."""
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix not in LOSS_FILE_SUFFIXES:
        raise InputFileError(
            f"{name}: unsupported file type (use {', '.join(LOSS_FILE_SUFFIXES)}). "
            f"Found {str(file)!r}."
        )
    if not file.is_file():
        raise InputFileError(f"{name}: no such file. Found {str(file)!r}.")
    reader = {".npy": _read_npy, ".csv": _read_csv, ".parquet": _read_parquet}[suffix]
    values = reader(file)
    return finite_vector(f"{name} ({file})", values)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` all at once: a temporary file, then :func:`os.replace`."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    try:
        handle, temporary = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".tmp", dir=directory
        )
    except OSError as error:
        raise InputFileError(f"cannot write {str(target)!r}: {error.strerror or error}.") from None
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException as error:
        # Whatever stopped the write (a full disk, Ctrl-C), leave no temporary behind.
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            message = error.strerror or str(error)
            raise InputFileError(f"cannot write {str(target)!r}: {message}.") from None
        raise


def atomic_write_json(path: str | os.PathLike[str], payload: Any) -> None:
    """Write ``payload`` as indented JSON (strict: no NaN) atomically."""
    text = json.dumps(payload, indent=2, allow_nan=False, sort_keys=False) + "\n"
    atomic_write_bytes(path, text.encode("utf-8"))
