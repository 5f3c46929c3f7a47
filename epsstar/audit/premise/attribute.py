"""Attribute inference (``--attribute COLUMN``): the attack of Yeom et al. (2018).

For each record, the attacker knows every column but the attribute, and the label; it tries
every value the attribute takes in the two tables and guesses the one under which the model
gives the label the lowest loss (the value the model finds most likely). The guess's accuracy
on members against non-members is read by
:func:`epsstar.statistics.readings.attribute.attribute_reading`: the advantage, the ε it
implies and its Clopper-Pearson lower bound. A model trained by ``epsstar train --attribute
COLUMN`` declares the bound of Cherubin et al. 2024 §5 on this advantage, shown beside it.

:func:`read_attribute_values` reads the column first (before any model runs): it must take
at least two values and at most :data:`MAX_VALUES`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.data.reading import TableRead
from epsstar.audit.data.records import LABEL, Records
from epsstar.audit.data.tables.columns import iter_column
from epsstar.audit.data.tables.labels import LabelMap
from epsstar.audit.engines.streaming import batch_losses, predict_batch
from epsstar.audit.model.features import Features
from epsstar.audit.model.plugins import LoadedModel
from epsstar.audit.output.threat_result import AttributeInference
from epsstar.exceptions import InvalidInputError
from epsstar.statistics.readings.attribute import AttributeSecurity, attribute_reading

__all__ = [
    "MAX_VALUES",
    "AttributeValues",
    "attribute_inference",
    "check_model_input",
    "read_attribute_values",
]

#: Most values an attribute may take (each record is run through the model once per value).
MAX_VALUES: Final = 50


@dataclass(frozen=True, slots=True)
class AttributeValues:
    """The attribute's column and the values it takes, as stored, in order."""

    column: str
    values: tuple[object, ...]


def read_attribute_values(
    train: Path, population: Path, column: str, *, separator: str = ","
) -> AttributeValues:
    """The values ``column`` takes in both tables (missing values aside; ``separator``
    separates the fields of CSV files)."""
    import pandas as pd

    seen: list[Any] = []
    for path in (train, population):
        for chunk in iter_column(path, column, separator=separator):
            values = pd.Series(np.asarray(chunk)).dropna()
            seen.extend(pd.unique(values).tolist())
            seen = list(dict.fromkeys(seen))
            if len(seen) > MAX_VALUES:
                raise InvalidInputError(
                    f"attribute column {column!r} must take at most {MAX_VALUES} values (each "
                    f"record is tried with every one). Found more than {MAX_VALUES}."
                )
    if len(seen) < 2:
        shown = "none" if not seen else f"only {seen[0]!r}"
        raise InvalidInputError(
            f"attribute column {column!r} must take at least two values to be inferred. "
            f"Found {shown}."
        )
    return AttributeValues(column, tuple(sorted(seen, key=str)))


def check_model_input(column: str, model_columns: Sequence[str]) -> None:
    """The attribute must be one of the columns the model receives."""
    if column not in model_columns:
        raise InvalidInputError(
            f"attribute column {column!r} must be one of the model's inputs "
            f"({', '.join(model_columns[:8])}{', ...' if len(model_columns) > 8 else ''}). "
            f"Found {column!r} outside them."
        )


def _guessed_right(
    frame: Any, values: AttributeValues, model: LoadedModel, read: TableRead, labels: LabelMap
) -> NDArray[np.bool_]:
    """Whether the value of least loss is each record's own (ties go to the first value)."""
    column = values.column
    encoded = labels.encode(frame[LABEL].to_numpy(), source=read.source)
    features = frame.drop(columns=[LABEL])
    losses = np.empty((len(values.values), len(frame)))
    for j, value in enumerate(values.values):
        tried = features.copy()
        tried[column] = value
        for start in range(0, len(tried), read.batch_size):
            part = tried.iloc[start : start + read.batch_size]
            predictions = predict_batch(model, Features.from_frame(part), read)
            stop = start + len(part)
            losses[j, start:stop] = batch_losses(model, encoded[start:stop], predictions, read)
    guess = np.asarray(values.values, dtype=object)[np.argmin(losses, axis=0)]
    own = features[column].to_numpy(dtype=object)
    return np.asarray([str(g) == str(o) for g, o in zip(guess, own, strict=True)], dtype=bool)


def attribute_inference(
    records: Records,
    values: AttributeValues,
    target: tuple[LoadedModel, TableRead, LabelMap],
    *,
    delta: float,
    confidence: float,
    bound: AttributeSecurity | None = None,
) -> AttributeInference:
    """The attack on both tables' records and its reading (see the module docstring)."""
    model, read, labels = target
    right = [
        _guessed_right(side, values, model, read, labels)
        for side in (records.train, records.population)
    ]
    reading = attribute_reading(
        int(right[0].sum()),
        right[0].size,
        int(right[1].sum()),
        right[1].size,
        delta=delta,
        confidence=confidence,
    )
    return AttributeInference(
        column=values.column,
        values=tuple(str(v) for v in values.values),
        reading=reading,
        confidence=confidence,
        bound=bound,
    )
