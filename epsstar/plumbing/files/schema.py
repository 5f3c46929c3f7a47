"""Declared schemas of the configuration files epsstar reads, checked before any work.

Every field of a reference recipe, a sweep configuration, an ``audit-many`` manifest, a
``landscape`` results file and ``--storage-options`` is declared once with a :class:`Spec`:
its type, range, allowed values and list lengths. :func:`load_document` reads a JSON or
TOML file within :data:`MAX_BYTES` and :data:`MAX_DEPTH` levels of nesting (a parser that
recurses deeper, as ``json`` and ``tomllib`` do, becomes the same one-line error), and a
:class:`Table` refuses unknown keys. Every error is one
:class:`~epsstar.exceptions.InputFileError` line that names the file and the field and ends
with the value at fault: ``sweep.toml: model.hidden must be a list of integers from 1 to
1000000. Found '64'.``

Written by hand (the spec classes below) rather than with ``jsonschema`` or ``pydantic``.
The same declarations check JSON and TOML documents and CSV manifests, whose cells are
text to be read as numbers: ``jsonschema`` never converts, and ``pydantic``'s lax mode
converts everywhere, taking ``"64"`` for an integer in a JSON recipe too. ``jsonschema``
also takes NaN and ±inf as numbers and lets NaN through ``minimum``/``maximum``, and
returns the document untyped, where :meth:`Fields.get` hands each checked value out with
its declared type. Both phrase errors by the rule broken, which would need translating
rule by rule into the project's one line that ends with the value found, and neither is a
runtime dependency today.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, TypeAlias, TypeVar, cast

from epsstar.exceptions import InputFileError
from epsstar.plumbing.files import json_parsing
from epsstar.plumbing.files.input_bounds import (
    MAX_BYTES,
    MAX_DEPTH,
    integer_too_long,
    nested_too_deep,
    read_text,
    shown,
)
from epsstar.plumbing.records.json_types import JsonValue

__all__ = [
    "Anything",
    "Cell",
    "CellValue",
    "Fields",
    "Flag",
    "Integer",
    "ListOf",
    "NameSet",
    "Nullable",
    "Number",
    "OneOf",
    "Scalar",
    "Spec",
    "Table",
    "Text",
    "Where",
    "check_depth",
    "load_document",
    "parse_json",
    "parse_json_object",
    "parse_toml",
    "read_json",
]

#: Longest text value, in characters.
MAX_TEXT = 4096

T = TypeVar("T")
K = TypeVar("K", bound=str)
K_co = TypeVar("K_co", bound=str, covariant=True)
#: What a :class:`Cell` holds: a hyper-parameter's value.
CellValue: TypeAlias = str | int | float | bool | tuple[str | int | float | bool, ...] | None
_INTEGER_TEXT = re.compile(r"\s*[+-]?\d{1,40}\s*")


@dataclass(frozen=True, slots=True)
class Where:
    """Where a value was found: the file (or option) and the dotted field within it.

    ``text_cells`` marks values read as text (CSV cells), which numbers and flags parse.
    """

    source: str
    field: str = ""
    text_cells: bool = False

    def at(self, key: str | int) -> Where:
        name = f"{self.field}[{key}]" if isinstance(key, int) else _join(self.field, key)
        return Where(self.source, name, self.text_cells)

    def error(self, rule: str, value: object) -> InputFileError:
        """``source: field must be rule. Found value.``"""
        return self.refuse(rule, shown(value))

    def refuse(self, rule: str, found: str) -> InputFileError:
        """``source: field must be rule. Found found.`` with ``found`` as given."""
        return InputFileError(
            f"{self.source}: {self.field or 'the top level'} must be {rule}. Found {found}."
        )


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


class Spec(Generic[T]):
    """One declared field: :meth:`check` returns the value typed, or raises one line."""

    @property
    def rule(self) -> str:
        """What the value must be, as the error says it (``an integer from 1 to 10``)."""
        raise NotImplementedError  # pragma: no cover - every spec says its own

    def check(self, value: object, where: Where) -> T:  # pragma: no cover - abstract
        raise NotImplementedError


def _range_rule(kind: str, low: float | None, high: float | None, open_low: bool) -> str:
    def text(bound: float) -> str:
        return str(bound) if isinstance(bound, int) else f"{bound:g}"

    if low is not None and high is not None:
        above = f" (above {text(low)})" if open_low else ""
        return f"{kind} from {text(low)} to {text(high)}{above}"
    if low is not None:
        return f"{kind} {'>' if open_low else '≥'} {text(low)}"
    return kind if high is None else f"{kind} ≤ {text(high)}"


@dataclass(frozen=True, slots=True)
class Integer(Spec[int]):
    """An integer (not a boolean) in ``[low, high]``; in text cells, its digits."""

    low: int | None = None
    high: int | None = None

    @property
    def rule(self) -> str:
        return _range_rule("an integer", self.low, self.high, False)

    def check(self, value: object, where: Where) -> int:
        number = value
        if where.text_cells and isinstance(value, str) and _INTEGER_TEXT.fullmatch(value):
            number = int(value)
        if isinstance(number, bool) or not isinstance(number, int):
            raise where.error(self.rule, value)
        if (self.low is not None and number < self.low) or (
            self.high is not None and number > self.high
        ):
            raise where.error(self.rule, value)
        return number


@dataclass(frozen=True, slots=True)
class Number(Spec[float]):
    """A finite number (an integer or a float, not a boolean) in its range."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False

    @property
    def rule(self) -> str:
        rule = _range_rule("a finite number", self.low, self.high, self.open_low)
        return rule + (
            f" (below {self.high:g})" if self.open_high and self.high is not None else ""
        )

    def check(self, value: object, where: Where) -> float:
        number: object = value
        if where.text_cells and isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                raise where.error(self.rule, value) from None
        if isinstance(number, bool) or not isinstance(number, int | float):
            raise where.error(self.rule, value)
        try:
            result = float(number)
        except OverflowError:  # an integer beyond float's range
            raise where.error(self.rule, value) from None
        below = self.low is not None and (
            result <= self.low if self.open_low else result < self.low
        )
        above = self.high is not None and (
            result >= self.high if self.open_high else result > self.high
        )
        if not math.isfinite(result) or below or above:
            raise where.error(self.rule, value)
        return result


@dataclass(frozen=True, slots=True)
class Text(Spec[str]):
    """A text of at most ``max_length`` characters without NUL, one of ``choices`` if given."""

    choices: tuple[str, ...] | None = None
    max_length: int = MAX_TEXT
    empty: bool = False

    @property
    def rule(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(repr(choice) for choice in self.choices)
        return f"a{'' if self.empty else ' non-empty'} text of at most {self.max_length} characters"

    def check(self, value: object, where: Where) -> str:
        if (
            not isinstance(value, str)
            or len(value) > self.max_length
            or "\x00" in value
            or (not self.empty and not value.strip())
            or (self.choices is not None and value not in self.choices)
        ):
            raise where.error(self.rule, value)
        return value


class NameSet(Protocol[K_co]):
    """The closed set of names an option takes, which checks a value and types it as the
    option's literal (the statistics' ``Names`` tables are such sets)."""

    def __iter__(self) -> Iterator[K_co]: ...

    def __contains__(self, value: object, /) -> bool: ...

    def check(self, value: object) -> K_co: ...


@dataclass(frozen=True, slots=True)
class OneOf(Spec[K], Generic[K]):
    """One of the names of an option (a :class:`NameSet`), typed as the option's literal."""

    names: NameSet[K]

    @property
    def rule(self) -> str:
        return "one of " + ", ".join(repr(name) for name in self.names)

    def check(self, value: object, where: Where) -> K:
        if value not in self.names:
            raise where.error(self.rule, value)
        return self.names.check(value)


_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


@dataclass(frozen=True, slots=True)
class Flag(Spec[bool]):
    """A boolean; in text cells, true/false, 1/0, yes/no or on/off."""

    @property
    def rule(self) -> str:
        return "true or false"

    def check(self, value: object, where: Where) -> bool:
        if where.text_cells and isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        if not isinstance(value, bool):
            raise where.error(self.rule, value)
        return value


@dataclass(frozen=True, slots=True)
class Scalar(Spec["str | int | float | bool"]):
    """A text, a finite number or a boolean: a value a table cell can hold."""

    @property
    def rule(self) -> str:
        return "a text, a finite number or true/false"

    def check(self, value: object, where: Where) -> str | int | float | bool:
        if isinstance(value, bool | int):
            return value
        if isinstance(value, float) and math.isfinite(value):
            return value
        if isinstance(value, str) and len(value) <= MAX_TEXT and "\x00" not in value:
            return value
        raise where.error(self.rule, value)


@dataclass(frozen=True, slots=True)
class Cell(Spec[CellValue]):
    """A hyper-parameter's value: null, a :class:`Scalar`, or a list of up to ``max_items``."""

    max_items: int = 1_000

    @property
    def rule(self) -> str:
        return (
            f"null, a text, a finite number, true/false or a list of at most {self.max_items} "
            "of them"
        )

    def check(self, value: object, where: Where) -> CellValue:
        if value is None:
            return None
        if isinstance(value, list) and len(value) <= self.max_items:
            return tuple(Scalar().check(item, where.at(index)) for index, item in enumerate(value))
        try:
            return Scalar().check(value, where)
        except InputFileError:
            raise where.error(self.rule, value) from None


@dataclass(frozen=True, slots=True)
class Anything(Spec[Any]):
    """Any value: a field that is read elsewhere, or not at all (its depth is bounded)."""

    @property
    def rule(self) -> str:
        return "any value"

    def check(self, value: object, where: Where) -> Any:
        return value


@dataclass(frozen=True, slots=True)
class Nullable(Spec["T | None"], Generic[T]):
    """``null`` (or an empty text cell), or a value of ``spec``."""

    spec: Spec[T]

    @property
    def rule(self) -> str:
        return f"{self.spec.rule} or null"

    def check(self, value: object, where: Where) -> T | None:
        if value is None or (where.text_cells and value == ""):
            return None
        return self.spec.check(value, where)


@dataclass(frozen=True, slots=True)
class ListOf(Spec[tuple[T, ...]], Generic[T]):
    """A list of ``min_items`` to ``max_items`` values of ``item``; with ``single`` a lone
    value counts as a list of one, and in text cells a comma-separated text is the list."""

    item: Spec[T]
    min_items: int = 0
    max_items: int = 10_000
    single: bool = False

    @property
    def rule(self) -> str:
        size = (
            f"{self.min_items} to {self.max_items}"
            if self.min_items
            else f"at most {self.max_items}"
        )
        kind = "one value or a list" if self.single else "a list"
        return f"{kind} of {size} items, each {self.item.rule}"

    def check(self, value: object, where: Where) -> tuple[T, ...]:
        items = value
        if where.text_cells and isinstance(value, str):
            items = [part.strip() for part in value.split(",") if part.strip()]
        elif self.single and not isinstance(value, list | Mapping):
            items = [value]
        if not isinstance(items, list) or not self.min_items <= len(items) <= self.max_items:
            raise where.error(self.rule, value)
        checked: list[T] = []
        for index, item in enumerate(items):
            checked.append(self.item.check(item, where.at(index)))
        return tuple(checked)


@dataclass(frozen=True, slots=True)
class Fields:
    """A checked table: each declared key's value, typed by its :class:`Spec`."""

    table: Table
    values: Mapping[str, object]
    where: Where
    #: Keys outside the declaration, each checked by the table's ``extra`` spec.
    extra: Mapping[str, object] = field(default_factory=dict)

    def get(self, key: str, spec: Spec[T]) -> T | None:
        """The value of ``key`` (``None`` when absent); ``spec`` must be the one declared."""
        if self.table.fields.get(key) is not spec:
            raise KeyError(f"{key!r} is not declared with this spec")  # a programming error
        return cast("T | None", self.values.get(key))

    def extras(self, spec: Spec[T]) -> dict[str, T]:
        """The keys outside the declaration with their values; ``spec`` must be the table's
        ``extra``."""
        if self.table.extra is not spec:
            raise KeyError("the table's extra keys are not declared with this spec")  # a bug
        return cast("dict[str, T]", dict(self.extra))

    def need(self, key: str, spec: Spec[T]) -> T:
        """The value of a required key."""
        value = self.get(key, spec)
        if value is None:
            raise self.where.at(key).error(spec.rule, None)
        return value


@dataclass(frozen=True, slots=True)
class Table(Spec[Fields]):
    """A table with the declared keys (``required`` ones among them), every value checked.

    Unknown keys are refused unless ``extra`` declares what they may hold.
    """

    fields: Mapping[str, Spec[Any]]
    required: tuple[str, ...] = ()
    extra: Spec[Any] | None = None

    @property
    def rule(self) -> str:
        return "a table"

    def check(self, value: object, where: Where) -> Fields:
        if not isinstance(value, Mapping):
            raise where.error(self.rule, value)
        missing = [key for key in self.required if value.get(key) in (None, "")]
        if missing:
            found = ", ".join(repr(str(key)) for key in list(value)[:8]) or "none"
            place = f" in {where.field}" if where.field else ""
            raise InputFileError(
                f"{where.source}: missing {', '.join(missing)}{place}. Found keys {found}."
            )
        values: dict[str, object] = {}
        extra: dict[str, object] = {}
        for key, item in value.items():
            name = str(key)
            if where.text_cells and item == "":
                continue  # an empty cell is an absent value
            spec = self.fields.get(name)
            if spec is not None:
                values[name] = self._checked(spec, item, where.at(name))
            elif self.extra is not None:
                extra[name] = self.extra.check(item, where.at(name))
            else:
                allowed = ", ".join(sorted(self.fields))
                place = where.field or "the top level"
                raise InputFileError(
                    f"{where.source}: {place} has no key {name!r} (allowed: {allowed}). "
                    f"Found {shown(name)}."
                )
        return Fields(self, values, where, extra)

    @staticmethod
    def _checked(spec: Spec[Any], item: object, where: Where) -> object:
        if item is None and not isinstance(spec, Nullable | Anything | Cell):
            return None  # absent and null are alike; `need` refuses a required one
        return spec.check(item, where)


def check_depth(document: JsonValue, where: Where, limit: int = MAX_DEPTH) -> None:
    """Refuse lists and tables nested more than ``limit`` deep, counted without recursion
    (:func:`epsstar.plumbing.files.json_parsing.check_document`)."""
    json_parsing.check_document(document, where.source, limit)


def parse_json(text: str, where: Where, limit: int = MAX_DEPTH) -> JsonValue:
    """The JSON document of ``text`` (:func:`epsstar.plumbing.files.json_parsing.parse_json`)."""
    return json_parsing.parse_json(text, where.source, limit=limit)


def parse_json_object(text: str, where: Where, limit: int = 16) -> dict[str, JsonValue]:
    """A JSON object (``--storage-options``): any keys, values nested at most ``limit`` deep."""
    document = parse_json(text, where, limit)
    if not isinstance(document, dict):
        raise InputFileError(f"{where.source}: must be a JSON object. Found {shown(text)}.")
    return document


def parse_toml(text: str, where: Where) -> JsonValue:
    """``tomllib.loads`` with its errors, deep recursion among them, as one line."""
    try:
        document: JsonValue = tomllib.loads(text)
    except RecursionError:
        raise nested_too_deep(where.source, MAX_DEPTH) from None
    except tomllib.TOMLDecodeError as error:
        raise InputFileError(
            f"{where.source}: must be TOML ({error}). Found invalid TOML."
        ) from None
    except ValueError:  # tomllib's int() of an integer beyond Python's conversion limit
        raise integer_too_long(where.source) from None
    check_depth(document, where)
    return document


def read_json(path: str | Path, what: str, *, max_bytes: int = MAX_BYTES) -> JsonValue:
    """The JSON document in ``path``, within ``max_bytes`` and :data:`MAX_DEPTH`."""
    return parse_json(read_text(path, what, max_bytes=max_bytes), Where(str(path)))


def load_document(path: str | Path, what: str, *, max_bytes: int = MAX_BYTES) -> JsonValue:
    """The JSON (``.json``) or TOML (``.toml``) document in ``path``, read as UTF-8 within
    ``max_bytes`` and :data:`MAX_DEPTH`; ``what`` names it in the errors."""
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix not in (".json", ".toml"):
        raise InputFileError(f"{what} must be a .json or .toml file. Found {str(file)!r}.")
    text = read_text(file, what, max_bytes=max_bytes)
    where = Where(str(file))
    return parse_json(text, where) if suffix == ".json" else parse_toml(text, where)
