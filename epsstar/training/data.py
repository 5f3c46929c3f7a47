"""Numeric feature tables with a label column, read for the trainer.

The file is read by :mod:`epsstar.audit.tables`, the reader the audit uses, so a table
is read the same way when a model is trained on it and when it is audited:
CSV, Parquet, NPZ (one 1-D array per column, or a 2-D ``X`` whose columns are
``x0``, ``x1``, ... plus 1-D arrays such as the label) or NPY; see that module
for the conventions. Every column other than the label is a feature unless
``features`` names them; features must be numeric (booleans and numeric text
count) and finite, and are returned as float64.

Labels of any type are mapped to 0..K−1 in sorted order of their values
(numbers numerically, text as text). The mapping is kept so that a population
table is encoded the same way and so that ``training.json`` can record it: the
class names are the labels as text, with booleans and whole-number floats
written as integers, and labels are matched to them with
:class:`epsstar.audit.tables.LabelMap`, as the audit matches ``training.json``'s classes.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.tables import DATA_FILE_SUFFIXES, LabelMap, iter_batches, read_schema
from epsstar.exceptions import InputFileError, InsufficientDataError, InvalidInputError

__all__ = ["TabularData", "encode_labels", "load_table"]

_BATCH_ROWS = 65_536
# How epsstar.audit.tables reports a missing label; the row is re-reported in this module's words.
_MISSING_LABEL = re.compile(r"must have a value in every row\. Found .* at row (\d+)\.$")


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


def _class_name(value: object) -> str:
    """A label as text: ``True`` is ``"1"``, ``2.0`` is ``"2"`` (what :class:`LabelMap` matches)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _class_names(labels: NDArray[Any]) -> tuple[str, ...]:
    """The distinct labels as text, numbers in numeric order and text in text order."""
    if labels.dtype.kind in "biuf":
        return tuple(_class_name(value) for value in np.unique(labels))
    import pandas as pd

    return tuple(sorted({_class_name(value) for value in pd.unique(labels)}))


def encode_labels(
    values: NDArray[Any] | Sequence[object], classes: Sequence[str] | None, source: str
) -> tuple[NDArray[np.int64], tuple[str, ...]]:
    """Map labels to 0..K−1; with ``classes`` given, unseen labels are an error.

    Without ``classes`` the classes are the distinct labels, sorted.
    """
    import pandas as pd

    raw = np.asarray(values)
    if raw.ndim != 1:
        raw = raw.reshape(-1)
    missing = np.asarray(pd.isna(raw), dtype=bool)
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        raise InvalidInputError(f"{source}: the label column has a missing value at row {row}.")
    names = tuple(classes) if classes is not None else _class_names(raw)
    try:
        label_map = LabelMap(names)
    except InvalidInputError as error:
        raise InvalidInputError(f"{source}: {error}") from None
    try:
        return label_map.encode(raw), names
    except InvalidInputError:
        pass
    # Name the first row whose label is not a class; uniques come in order of first appearance.
    codes, uniques = pd.factorize(raw)
    for position, value in enumerate(np.asarray(uniques, dtype=object)):
        try:
            label_map.encode(np.array([value], dtype=object))
        except InvalidInputError:
            row = int(np.flatnonzero(codes == position)[0])
            raise InvalidInputError(
                f"{source}: label {_class_name(value)!r} at row {row} does not occur in the "
                f"training data (classes {list(names)})."
            ) from None
    raise AssertionError("LabelMap refused labels it matches one by one")  # pragma: no cover


def _without_path(error: BaseException, path: Path) -> str:
    return str(error).removeprefix(f"{path}: ")


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
    location = Path(path)
    known = location.suffix.lower() in DATA_FILE_SUFFIXES
    if known and not location.is_file():
        raise InputFileError(f"data file does not exist or is not a file. Found {source!r}.")
    try:
        schema = read_schema(location)
    except (InputFileError, InsufficientDataError) as error:  # unreadable, empty, bad layout
        if not known:
            raise
        raise InputFileError(
            f"could not read {source!r}: {_without_path(error, location)}"
        ) from None
    columns = schema.columns
    if label_column not in columns:  # the rest of the selection is checked by iter_batches
        shown = ", ".join(repr(name) for name in columns[:10])
        raise InvalidInputError(
            f"{source}: label column {label_column!r} not found. Found columns {shown}"
            f"{', ...' if len(columns) > 10 else ''}."
        )
    batches = iter_batches(
        location, label_column=label_column, features=features, batch_size=_BATCH_ROWS
    )
    if features is None:
        names = [name for name in columns if name != label_column]
    else:
        names = [str(name) for name in features]
    matrices: list[NDArray[Any]] = []
    labels: list[NDArray[Any]] = []
    try:
        for batch in batches:
            matrices.append(batch.features)
            labels.append(batch.labels)
    except InputFileError as error:
        raise InputFileError(
            f"could not read {source!r}: {_without_path(error, location)}"
        ) from None
    except InsufficientDataError:
        raise InsufficientDataError(f"{source}: the table has no rows.") from None
    except InvalidInputError as error:
        found = _MISSING_LABEL.search(str(error))
        if found is None or f"label column {label_column!r}" not in str(error):
            raise
        raise InvalidInputError(
            f"{source}: the label column has a missing value at row {found.group(1)}."
        ) from None
    matrix = np.concatenate(matrices).astype(np.float64, copy=False)
    codes, encoded = encode_labels(np.concatenate(labels), classes, source)
    return TabularData(
        features=np.ascontiguousarray(matrix),
        labels=codes,
        feature_names=tuple(names),
        classes=encoded,
        label_column=label_column,
        source=source,
    )
