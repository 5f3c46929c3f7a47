"""Numeric feature tables with a label column, read for the trainer.

The file is read by :func:`epsstar.audit.data.tables.read_table`, the reader the audit uses, so
a table is read the same way, with the same error messages, when a model is trained on
it and when it is audited:
CSV, Parquet, NPZ (one 1-D array per column, or a 2-D ``X`` whose columns are
``x0``, ``x1``, ... plus 1-D arrays such as the label) or NPY; see that module
for the conventions. Every column other than the label is a feature unless
``features`` names them; features must be numeric (booleans and numeric text
count) and finite, and are returned as float64.

Labels of any type are mapped to 0..K−1 in sorted order of their values
(numbers numerically, text as text). The mapping is kept so that a population
table is encoded the same way and so that ``training.json`` and the exported models
can record it: the class names are the labels as text, with booleans and whole-number
floats written as integers, and labels are matched to them with
:class:`epsstar.audit.data.tables.LabelMap`, as the audit matches the classes the exported
models record.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.data.tables.batches import read_table
from epsstar.audit.data.tables.labels import LabelMap
from epsstar.exceptions import InvalidInputError

__all__ = ["TabularData", "encode_labels", "load_table"]


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
    Reading errors are those of :func:`epsstar.audit.data.tables.read_table`.
    """
    # The trained model takes float32: a value beyond its range is refused here, by name.
    table = read_table(path, label_column=label_column, features=features, input_dtype=np.float32)
    source = str(path)
    codes, encoded = encode_labels(table.labels, classes, source)
    return TabularData(
        features=np.ascontiguousarray(table.features, dtype=np.float64),
        labels=codes,
        feature_names=table.feature_names,
        classes=encoded,
        label_column=label_column,
        source=source,
    )
