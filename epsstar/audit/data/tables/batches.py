"""A table streamed in checked batches of a fixed number of rows, or read whole."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import DTypeLike, NDArray

from epsstar.audit.data.tables.formats import _chunks, read_schema
from epsstar.audit.data.tables.shared import Batch, _clipped
from epsstar.audit.data.tables.values import _feature_columns, _label_vector, _select
from epsstar.audit.model.features import Features
from epsstar.exceptions import InsufficientDataError, InvalidInputError

Progress = Callable[[int], None]


def _rebatch(batches: Iterator[Batch], size: int) -> Iterator[Batch]:
    """Regroup batches into exactly ``size`` rows each (the last may be shorter)."""
    pending: list[Batch] = []
    held = 0
    for batch in batches:
        if not pending and len(batch) == size:
            yield batch
            continue
        pending.append(batch)
        held += len(batch)
        while held >= size:
            features = Features.concatenate([b.features for b in pending])
            labels = np.concatenate([b.labels for b in pending])
            yield Batch(features.slice(0, size), labels[:size])
            rest_features = Features(
                features.names, tuple(column[size:].copy() for column in features.columns)
            )
            rest = Batch(rest_features, labels[size:].copy())
            pending, held = ([rest], len(rest)) if len(rest) else ([], 0)
    if held:
        yield Batch(
            Features.concatenate([b.features for b in pending]),
            np.concatenate([b.labels for b in pending]),
        )


def iter_batches(
    path: str | os.PathLike[str],
    *,
    label_column: str,
    features: Sequence[str] | None = None,
    batch_size: int = 65_536,
    progress: Progress | None = None,
    input_dtype: DTypeLike | None = None,
    text: bool = True,
    missing: bool = False,
    separator: str = ",",
) -> Iterator[Batch]:
    """Stream a table's rows as :class:`Batch` es of ``batch_size`` rows (the last may be fewer).

    ``features`` selects and orders the feature columns (default: every column
    but the label, in file order). ``progress``, if given, is called after each
    batch with the number of rows in it, e.g. ``lambda n: bar.advance(task, n)``
    with a rich progress bar whose total is :func:`count_rows`. ``input_dtype``, if
    given, is the model's input type: every feature must fit its range (1e39 would
    become infinite in float32, -1 would wrap around in uint8). With ``text=False`` (a
    model that takes numbers only) a column that is not numeric is refused, naming the
    file, the row and the value; otherwise it is kept as text. With ``missing=True`` (a
    model that handles missing values itself) a missing feature value is kept as NaN
    rather than refused. ``separator`` separates a CSV file's fields.

    The file is opened and its columns are checked before the first batch is
    requested; a file without rows raises :class:`InsufficientDataError`.
    """
    options = (input_dtype, text, missing, separator)
    return _open_batches(path, label_column, features, batch_size, progress, *options)[1]


@dataclass(frozen=True, slots=True)
class Table:
    """A whole table in memory: ``features`` ``(n, d)`` and ``labels`` ``(n,)`` as
    :func:`iter_batches` returns them, and the names of the feature columns, in order."""

    path: Path
    feature_names: tuple[str, ...]
    features: NDArray[Any]
    labels: NDArray[Any]


def read_table(
    path: str | os.PathLike[str],
    *,
    label_column: str,
    features: Sequence[str] | None = None,
    batch_size: int = 65_536,
    input_dtype: DTypeLike | None = None,
) -> Table:
    """Every row of a table, read and checked as by :func:`iter_batches`."""
    names, batches = _open_batches(path, label_column, features, batch_size, None, input_dtype)
    read = list(batches)
    columns = Features.concatenate([batch.features for batch in read])
    text = [n for n, c in zip(columns.names, columns.columns, strict=True) if c.dtype == object]
    if text:
        raise InvalidInputError(
            f"{path}: feature column {text[0]!r} must be numeric to be read as a matrix. "
            f"Found text such as {_clipped(columns.column(text[0])[0])}."
        )
    return Table(
        path=Path(path),
        feature_names=tuple(names),
        features=columns.matrix(),
        labels=np.concatenate([batch.labels for batch in read]),
    )


def _open_batches(
    path: str | os.PathLike[str],
    label_column: str,
    features: Sequence[str] | None,
    batch_size: int,
    progress: Progress | None,
    input_dtype: DTypeLike | None = None,
    text: bool = True,
    missing: bool = False,
    separator: str = ",",
) -> tuple[list[str], Iterator[Batch]]:
    """The feature names and the batches; the arguments and columns are checked now."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
        raise InvalidInputError(f"batch_size must be an integer ≥ 1. Found {batch_size!r}.")
    if batch_size < 1:
        raise InvalidInputError(f"batch_size must be an integer ≥ 1. Found {batch_size}.")
    schema = read_schema(path, separator=separator)
    names = _select(schema, label_column, features)
    size = int(batch_size)
    chunks = _chunks(schema, [*names, label_column], size)
    target = None if input_dtype is None else np.dtype(input_dtype)
    checks = (target, text, missing)
    stream = _stream(schema.path, names, label_column, chunks, checks, size, progress)
    return names, stream


def _stream(
    path: Path,
    names: list[str],
    label_column: str,
    chunks: Iterator[list[NDArray[Any]]],
    checks: tuple[np.dtype[Any] | None, bool, bool],
    size: int,
    progress: Progress | None,
) -> Iterator[Batch]:
    """Checked batches; ``checks`` are the model's input type (numbers must fit it),
    whether text columns are kept and whether missing values are."""

    def validated() -> Iterator[Batch]:
        row0 = 0
        for columns in chunks:
            rows = len(columns[-1])
            if rows == 0:
                continue
            typed = _feature_columns(path, names, columns[:-1], row0, *checks)
            labels = _label_vector(path, label_column, columns[-1], row0)
            yield Batch(typed, labels)
            row0 += rows
        if row0 == 0:
            raise InsufficientDataError(f"{path}: must hold at least one row. Found none.")

    for batch in _rebatch(validated(), size):
        yield batch
        if progress is not None:
            progress(len(batch))
