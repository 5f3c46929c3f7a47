"""Tables held in memory (a notebook's DataFrames and arrays), staged as files.

A table in memory is written once to a private temporary folder in the format whose reader
takes it (:mod:`epsstar.audit.data.tables`): a pandas or polars DataFrame or a pyarrow
Table as Parquet, an ``(X, y)`` pair of numpy arrays as the ``.npz`` file ``np.savez(X=X,
LABEL=y)`` writes. Every check of the data (missing values, text, the label column, columns
by name, shared rows) then runs as it runs on a file, and the messages name the object
(``the training DataFrame``) where they would name the file: :meth:`StagedTables.named`.
The staged file's SHA-256 stands for the table's content in the provenance: the bytes of a
deterministic serialisation (the same data, library versions and column types give the
same file).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np

from epsstar.exceptions import InvalidInputError

__all__ = ["StagedTables", "TableObject", "is_path", "table_kind"]

#: How a table in memory is called in messages, by its library's type.
_KINDS: Final = {
    "pandas": "DataFrame",
    "polars": "polars DataFrame",
    "pyarrow": "Arrow table",
    "numpy": "(X, y) arrays",
}
_ROLES: Final = {"train": "training", "population": "population"}

TableObject = Any
"""A table in memory: a pandas or polars DataFrame, a pyarrow Table or an ``(X, y)`` pair."""


def is_path(value: object) -> bool:
    """Whether ``value`` names a file (a ``str`` or an ``os.PathLike``) rather than holds one."""
    return isinstance(value, (str, os.PathLike))


def table_kind(value: object) -> str | None:
    """The library of a table in memory (``"pandas"``, ``"polars"``, ``"pyarrow"``,
    ``"numpy"``), or ``None`` for anything else."""
    if isinstance(value, tuple) and len(value) == 2:
        return "numpy" if all(isinstance(part, np.ndarray) for part in value) else None
    library = type(value).__module__.split(".")[0]
    name = type(value).__name__
    if (library, name) in {("pandas", "DataFrame"), ("polars", "DataFrame"), ("pyarrow", "Table")}:
        return library
    return None


def _arrow(value: TableObject, kind: str, named: str) -> Any:
    """The pyarrow Table of a DataFrame (without a pandas index) or Table."""
    import pyarrow as pa

    if kind == "pyarrow":
        return value
    if kind == "polars":
        return value.to_arrow()
    odd = [column for column in value.columns if not isinstance(column, str)]
    if odd:
        raise InvalidInputError(
            f"{named}: column names must be strings. Found {odd[0]!r} ({type(odd[0]).__name__})."
        )
    try:
        return pa.Table.from_pandas(value, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as error:
        column = _failing_column(value)
        where = f"column {column!r}" if column is not None else "a column"
        first = error.args[0] if error.args else error
        reason = str(first).strip().splitlines()[0][:160]
        raise InvalidInputError(
            f"{named}: {where} must hold values of one type (numbers, text or booleans). "
            f"Found {reason}."
        ) from None


def _failing_column(frame: Any) -> str | None:
    """The first column of ``frame`` that Arrow cannot convert."""
    import pyarrow as pa

    for column in frame.columns:
        try:
            pa.array(frame[column], from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            return str(column)
    return None


def _write_arrays(value: tuple[np.ndarray, np.ndarray], label: str, file: Path, named: str) -> None:
    """``(X, y)`` as the ``.npz`` file of ``X`` beside the label array."""
    features, labels = value
    if label in ("X", "columns"):
        raise InvalidInputError(
            f"{named}: the label column of (X, y) arrays must not be called 'X' or 'columns', "
            f"the names of the features' arrays. Found label {label!r}."
        )
    if features.ndim < 2 or labels.ndim != 1 or features.shape[0] != labels.shape[0]:
        raise InvalidInputError(
            f"{named}: must be (X, y) with X of shape (records, features...) and y of shape "
            f"(records,). Found X {features.shape}, y {labels.shape}."
        )
    arrays: dict[str, Any] = {"X": features, label: labels}
    with file.open("wb") as stream:
        np.savez(stream, **arrays)


@dataclass(frozen=True, slots=True)
class _Staged:
    name: str
    path: Path


class StagedTables:
    """The tables in memory of one audit, each staged as a file in a private folder that is
    removed when this object is collected (or by :meth:`close`)."""

    def __init__(self) -> None:
        self._folder = Path(tempfile.mkdtemp(prefix="epsstar-tables-"))
        self._staged: dict[str, _Staged] = {}
        self._cleanup = weakref.finalize(self, shutil.rmtree, self._folder, True)

    def stage(self, value: TableObject, role: str, label: str, *, arrays: bool = True) -> Path:
        """The file ``value`` (the table of ``role``) is staged as; ``arrays=False`` refuses
        ``(X, y)`` arrays (for a reader of CSV and Parquet only: a training procedure's)."""
        kind = table_kind(value)
        called = _ROLES.get(role, role)
        if kind is None:
            raise InvalidInputError(
                f"the {called} data must be a path, a pandas or polars DataFrame, a pyarrow "
                f"Table or an (X, y) pair of numpy arrays. Found a "
                f"{type(value).__module__}.{type(value).__qualname__}."
            )
        if kind == "numpy" and not arrays:
            raise InvalidInputError(
                f"the {called} data must be a table (a pandas or polars DataFrame, a pyarrow "
                f"Table, or a CSV or Parquet file) here. Found (X, y) arrays."
            )
        named = f"the {called} {_KINDS[kind]}"
        if kind == "numpy":
            file = self._folder / f"{role}.npz"
            _write_arrays(value, label, file, named)
        else:
            import pyarrow.parquet as pq

            file = self._folder / f"{role}.parquet"
            pq.write_table(_arrow(value, kind, named), file)
        self._staged[role] = _Staged(named, file)
        return file

    def name(self, role: str) -> str | None:
        """How messages call the table of ``role`` (``None``: it is a file)."""
        staged = self._staged.get(role)
        return None if staged is None else staged.name

    def named(self, text: str) -> str:
        """``text`` with each staged file's path replaced by the name of its table."""
        for staged in self._staged.values():
            path = os.fspath(staged.path)
            text = text.replace(repr(path), staged.name).replace(path, staged.name)
        return text

    def close(self) -> None:
        """Remove the staged files now."""
        self._cleanup()
