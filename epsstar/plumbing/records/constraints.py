"""Options checked where they enter: what each field of an options record accepts, declared
once on the field.

A frozen record declares a field's constraint as its metadata,
``delta: float | None = field(default=None, metadata=constraint(Maybe(InRange(0, 0.5))))``,
and calls :func:`check_fields` in ``__post_init__``: the fields are checked in order, the
first refusal is one :class:`~epsstar.exceptions.InvalidInputError` line that names the field,
says what it accepts and ends with the value found (``delta must be in (0, 0.5). Found
0.7.``), and each field keeps its checked value (a number as a ``float``, a count as an
``int``). Functions that receive the record trust it and check none of it again.

The command line names the flag instead of the field when the user typed it
(``--batch-size must be …``), so a field is named as the library's parameter. A check that
reads two fields at once (``target_epsilon`` or ``noise_multiplier``, not both) stays in the
record's ``__post_init__``, after :func:`check_fields`.

Written by hand, after the manner of scikit-learn's declared parameter constraints (which are
private to scikit-learn and word their errors their own way): validators of pydantic or attrs
would replace the frozen dataclasses every layer hands on, and the messages here are the
project's one line, the same as :mod:`epsstar.statistics._validation` gives for a bare number.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from numbers import Integral
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, SupportsFloat, TypeVar, cast

from epsstar.exceptions import InvalidInputError

if TYPE_CHECKING:  # pragma: no cover
    from _typeshed import DataclassInstance

__all__ = [
    "Closed",
    "ColumnName",
    "ColumnNames",
    "Constraint",
    "EachOf",
    "InRange",
    "Maybe",
    "OneOf",
    "WholeNumber",
    "check_fields",
    "constraint",
    "constraints_of",
    "shown",
]

_METADATA_KEY: Final = "epsstar.constraint"
_Checked = TypeVar("_Checked", covariant=True)
#: Which ends of an interval belong to it.
Closed = Literal["neither", "left", "right", "both"]


def shown(value: object) -> str:
    """A value as a message ends with it: text quoted, anything else as printed."""
    return repr(value) if isinstance(value, str) else f"{value}"


class Constraint(Generic[_Checked]):
    """What one option accepts: :meth:`check` returns the value to keep, or raises one line
    naming the option (``name``) and ending with the value."""

    def check(self, name: str, value: object) -> _Checked:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class InRange(Constraint[float]):
    """A number in the interval from ``low`` to ``high``, ends included as ``closed`` says
    (an infinite ``high`` is excluded unless closed); kept as a ``float``."""

    low: float
    high: float
    closed: Closed = "neither"

    def check(self, name: str, value: object) -> float:
        try:
            number = float(cast("SupportsFloat | str", value))
        except (TypeError, ValueError):
            raise InvalidInputError(f"{name} must be a number. Found {shown(value)}.") from None
        low_in = self.closed in ("left", "both")
        high_in = self.closed in ("right", "both")
        above = number >= self.low if low_in else number > self.low
        below = number <= self.high if high_in else number < self.high
        finite = math.isfinite(number) or (high_in and number == self.high)
        if not (finite and above and below):
            left, right = "[" if low_in else "(", "]" if high_in else ")"
            raise InvalidInputError(
                f"{name} must be in {left}{self.low:g}, {self.high:g}{right}. Found {value}."
            )
        return number


@dataclass(frozen=True, slots=True)
class WholeNumber(Constraint[int]):
    """An integer ≥ ``minimum`` (a boolean is not one); kept as an ``int``."""

    minimum: int = 1

    def check(self, name: str, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, Integral):
            raise InvalidInputError(
                f"{name} must be an integer ≥ {self.minimum}. Found {shown(value)}."
            )
        number = int(value)
        if number < self.minimum:
            raise InvalidInputError(f"{name} must be an integer ≥ {self.minimum}. Found {value}.")
        return number


@dataclass(frozen=True, slots=True)
class OneOf(Constraint[str]):
    """One of ``names`` (a tuple of text, or a registry of names that iterates over them)."""

    names: Collection[str]

    def check(self, name: str, value: object) -> str:
        if not isinstance(value, str) or value not in self.names:
            raise InvalidInputError(
                f"{name} must be one of {', '.join(self.names)}. Found {value!r}."
            )
        return value


@dataclass(frozen=True, slots=True)
class ColumnName(Constraint[str]):
    """The name of a column: a text that is not empty."""

    def check(self, name: str, value: object) -> str:
        if not isinstance(value, str) or not value:
            raise InvalidInputError(f"{name} must name a column. Found {value!r}.")
        return value


@dataclass(frozen=True, slots=True)
class ColumnNames(Constraint[tuple[str, ...]]):
    """Column names in order: a sequence (not a text) of at least one name, each once; kept
    as a tuple of text."""

    def check(self, name: str, value: object) -> tuple[str, ...]:
        if isinstance(value, str):
            raise InvalidInputError(
                f"{name} must be a sequence of column names. Found the string {value!r}."
            )
        if not isinstance(value, Collection):
            raise InvalidInputError(f"{name} must be a sequence of column names. Found {value!r}.")
        names = tuple(str(item) for item in value)
        repeated = [item for item in names if names.count(item) > 1]
        if repeated:
            raise InvalidInputError(
                f"{name} must name each column once. Found {repeated[0]!r} twice."
            )
        if not names:
            raise InvalidInputError(f"{name} must name at least one column. Found none.")
        return names


@dataclass(frozen=True, slots=True)
class Maybe(Constraint[Any]):
    """``None`` (the option not given), or a value ``inner`` accepts."""

    inner: Constraint[Any]

    def check(self, name: str, value: object) -> Any:
        return None if value is None else self.inner.check(name, value)


@dataclass(frozen=True, slots=True)
class EachOf(Constraint[tuple[Any, ...]]):
    """A sequence (not a text) whose every item ``inner`` accepts; kept as a tuple."""

    inner: Constraint[Any]

    def check(self, name: str, value: object) -> tuple[Any, ...]:
        if isinstance(value, str | bytes) or not isinstance(value, Collection):
            raise InvalidInputError(f"{name} must be a sequence. Found {shown(value)}.")
        return tuple(self.inner.check(name, item) for item in value)


def constraint(rule: Constraint[Any]) -> Mapping[str, Constraint[Any]]:
    """A field's constraint as the metadata of ``dataclasses.field``:
    ``n: int = field(default=1, metadata=constraint(WholeNumber()))``."""
    return {_METADATA_KEY: rule}


def constraints_of(
    record: DataclassInstance | type[DataclassInstance],
) -> dict[str, Constraint[Any]]:
    """The constraint of each constrained field of a record (or its class), in field order."""
    return {
        item.name: item.metadata[_METADATA_KEY]
        for item in dataclasses.fields(record)
        if _METADATA_KEY in item.metadata
    }


def check_fields(record: DataclassInstance) -> None:
    """Check every constrained field of the dataclass ``record``, in order, and keep each
    checked value (``object.__setattr__``, so a frozen record may call it while built)."""
    for name, rule in constraints_of(record).items():
        object.__setattr__(record, name, rule.check(name, getattr(record, name)))
