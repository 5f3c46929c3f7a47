"""Epsilon* per slice of an audit's records: ``--slice-by COLUMN``.

:func:`read_slice_keys` reads the column from both tables (before any model runs, so a
bad column fails at once) and gives every record the code of its value; values compare
as text with whole-number floats written as integers (``1.0`` and ``1`` are one slice)
and a missing value is its own slice (value ``None``, shown as :data:`MISSING`; a text value
spelled ``(missing)`` is another slice). Slices are ordered by value
(numerically when every value is a number), the missing slice last; at most
:data:`MAX_SLICES` of them.

:func:`audit_slices` estimates Epsilon* within each slice from the scores of the audit's
headline attack (:mod:`epsstar.statistics.estimators.slices`): same method, same δ, the interval
when one was asked for, and lower bounds that hold together.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.attacks.from_losses import minimum_records
from epsstar.audit.attacks.prefixed_warnings import prefixed_warnings
from epsstar.audit.data.tables.columns import iter_column
from epsstar.audit.data.tables.values import refuse_nested
from epsstar.audit.options import AuditOptions
from epsstar.audit.output.result import AuditResult
from epsstar.audit.output.slice_result import MISSING, SliceResult, SliceRow
from epsstar.exceptions import InvalidInputError
from epsstar.statistics.estimators.methods import Bootstrap
from epsstar.statistics.estimators.slices import SlicedScores, slice_estimates
from epsstar.statistics.names import AttackName

__all__ = ["MAX_SLICES", "MISSING", "SliceKeys", "audit_slices", "read_slice_keys"]

#: Most slices one audit estimates; a column with more values must be grouped first.
MAX_SLICES: Final[int] = 50


@dataclass(frozen=True, slots=True)
class SliceKeys:
    """The slices of ``column``: their values (as text, in order) and each record's code."""

    column: str
    values: tuple[str | None, ...]
    train: NDArray[np.int64]
    population: NDArray[np.int64]


def _text(value: object) -> str:
    """A value as the text that names its slice."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _texts(path: Path, column: str, separator: str) -> NDArray[Any]:
    """Every value of ``column`` in ``path`` as slice text, missing values as ``None``."""
    import pandas as pd

    parts = []
    row0 = 0
    for chunk in iter_column(path, column, separator=separator):
        values = np.asarray(chunk)
        refuse_nested(path, f"slice_by column {column!r}", values, row0)
        row0 += len(values)
        if values.ndim != 1:
            raise InvalidInputError(
                f"{path}: slice_by column {column!r} must hold one value per record. Found "
                f"arrays of shape {values.shape[1:]}."
            )
        if values.dtype.kind == "S":
            values = np.char.decode(values, "utf-8", errors="replace")
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        names = np.array([_text(value) for value in uniques] + [None], dtype=object)
        parts.append(names[codes])  # code -1 picks the last name, None
    return np.concatenate(parts) if parts else np.empty(0, dtype=object)


def _order(values: list[str | None]) -> list[str | None]:
    """Slice values sorted numerically when every one is a number, else as text; the
    missing slice (``None``) last."""
    present = [value for value in values if value is not None]

    def number(text: str) -> float | None:
        try:
            parsed = float(text)
        except ValueError:
            return None
        return None if math.isnan(parsed) else parsed

    numbers = {value: number(value) for value in present}
    if all(n is not None for n in numbers.values()):
        ordered: list[str | None] = [
            *sorted(present, key=lambda value: cast(float, numbers[value]))
        ]
    else:
        ordered = [*sorted(present)]
    return ordered + ([None] if None in values else [])


def read_slice_keys(
    train: Path, population: Path, column: str, *, separator: str = ","
) -> SliceKeys:
    """The slices of ``column`` over both tables (at most :data:`MAX_SLICES`);
    ``separator`` separates the fields of CSV files."""
    import pandas as pd

    if not isinstance(column, str) or not column:
        raise InvalidInputError(f"slice_by must name a column. Found {column!r}.")
    texts = (_texts(train, column, separator), _texts(population, column, separator))
    codes, uniques = pd.factorize(np.concatenate(texts), use_na_sentinel=False)
    if len(uniques) > MAX_SLICES:
        raise InvalidInputError(
            f"slice_by column {column!r} must have at most {MAX_SLICES} distinct values to "
            f"audit a slice per value (group it first). Found {len(uniques)} in the training "
            f"and population data."
        )
    found: list[str | None] = [None if pd.isna(value) else str(value) for value in uniques]
    ordered = _order(found)
    position = {value: index for index, value in enumerate(ordered)}
    recode = np.array([position[value] for value in found], dtype=np.int64)
    coded = recode[codes]
    n_train = texts[0].size
    return SliceKeys(column, tuple(ordered), coded[:n_train], coded[n_train:])


def _headline_scores(
    result: AuditResult,
) -> tuple[AttackName, NDArray[np.float64], NDArray[np.float64], NDArray[np.int64] | None]:
    """(attack, member scores, non-member scores, the population rows they score) of the
    attack whose figures are the headline: the loss attack's unless it did not run."""
    headline = result.headline_attack
    if headline is None:
        return "loss", result.train_losses, result.population_losses, None
    return (
        headline.name,
        headline.member_scores,
        headline.nonmember_scores,
        headline.nonmember_rows,
    )


def audit_slices(result: AuditResult, keys: SliceKeys, options: AuditOptions) -> SliceResult:
    """Epsilon* within each slice of ``keys`` for the headline attack of ``result``."""
    attack, members, nonmembers, rows = _headline_scores(result)
    population = keys.population if rows is None else keys.population[rows]
    if keys.train.size != members.size or population.size != nonmembers.size:
        raise InvalidInputError(
            f"slice_by column {keys.column!r} must have one value per scored record. Found "
            f"{keys.train.size} and {population.size} values for {members.size} and "
            f"{nonmembers.size} scores."
        )
    method = options.headline_method
    level = options.interval
    interval = None if level is None else Bootstrap(level, options.n_bootstrap)
    minimum = minimum_records(method)
    scored = SlicedScores(members, nonmembers, keys.train, population, len(keys.values))
    with prefixed_warnings(f"the slices of {keys.column!r}: "):
        table = slice_estimates(
            scored,
            options.estimator(),
            delta=result.delta,
            minimum=minimum,
            confidence=options.confidence,
            seed=options.seed,
            interval=interval,
        )
    rows_out = tuple(
        SliceRow(value, estimate)
        for value, estimate in zip(keys.values, table.estimates, strict=True)
    )
    return SliceResult(
        column=keys.column,
        attack=attack,
        delta=result.delta,
        method=method,
        confidence=options.confidence,
        confidence_each=table.confidence_each,
        minimum=minimum,
        rows=rows_out,
    )
