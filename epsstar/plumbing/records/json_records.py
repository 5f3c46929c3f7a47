"""Records that serialise themselves: a frozen dataclass's JSON form, read from its fields.

A record declares its JSON once, on its fields: a field is written under its own name
unless ``field(metadata=json_rule(name=...))`` renames it; it may be left out when
``None``, empty or at its default, written as ``null`` when empty, skipped, or lend its keys
to its parent (``flatten``).
Values that a record derives from its fields (``@json_property``) are written beside them,
after the field they name. :func:`to_json` walks any such record; :func:`json_keys` lists
the keys a record's JSON may hold, in order, so that a test can hold each JSON schema to
its record.

The value rules are the JSON document's: non-finite floats become ``null`` (JSON has no
NaN), tuples become arrays, mappings objects (keys as strings), enumerations their values
and paths their text. Written by hand because ``dataclasses.asdict`` knows none of
renames, omissions, derived values or NaN, and a schema library (pydantic, attrs with
cattrs) would replace the frozen records the statistics hand between layers.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import sys
import typing
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Final, TypeVar, cast

from epsstar.plumbing.records.json_types import JsonObject, JsonValue

__all__ = ["JsonRecord", "json_keys", "json_property", "json_rule", "to_json", "to_json_value"]

_METADATA_KEY: Final = "epsstar.json"
_Value = TypeVar("_Value")


@dataclasses.dataclass(frozen=True, slots=True)
class JsonFieldRule:
    """How one field is written: under ``name``; left out when ``None`` (``omit_if_none``),
    empty (``omit_if_empty``) or equal to the field's default (``omit_if_default``); ``null``
    when empty (``empty_as_none``); not at all (``skip``); or as its own keys in the
    parent's object (``flatten``)."""

    name: str | None = None
    omit_if_none: bool = False
    omit_if_empty: bool = False
    empty_as_none: bool = False
    skip: bool = False
    flatten: bool = False
    omit_if_default: bool = False


def json_rule(
    *,
    name: str | None = None,
    omit_if_none: bool = False,
    omit_if_empty: bool = False,
    empty_as_none: bool = False,
    skip: bool = False,
    flatten: bool = False,
    omit_if_default: bool = False,
) -> Mapping[str, JsonFieldRule]:
    """A field's JSON rule as the metadata of ``dataclasses.field`` (see
    :class:`JsonFieldRule`): ``x: float = field(metadata=json_rule(name="y"))``."""
    return {
        _METADATA_KEY: JsonFieldRule(
            name=name,
            omit_if_none=omit_if_none,
            omit_if_empty=omit_if_empty,
            empty_as_none=empty_as_none,
            skip=skip,
            flatten=flatten,
            omit_if_default=omit_if_default,
        )
    }


class _JsonProperty(property):
    """A property whose value is written beside the fields (see :func:`json_property`)."""

    json_name: str | None
    after: str | None
    omit_if_none: bool


def json_property(
    *, name: str | None = None, after: str | None = None, omit_if_none: bool = False
) -> Callable[[Callable[[Any], _Value]], _Value]:
    """A derived value written in the record's JSON: under ``name`` (else the property's),
    right after the field ``after`` (else after every field), left out when ``None`` if
    ``omit_if_none``."""

    def make(getter: Callable[[Any], _Value]) -> _Value:
        made = _JsonProperty(getter)
        made.json_name = name
        made.after = after
        made.omit_if_none = omit_if_none
        made.__doc__ = getter.__doc__
        return cast("_Value", made)

    return make


class JsonRecord:
    """Base of the records whose JSON is read from their fields: ``to_dict()`` is
    :func:`to_json` of the record."""

    __slots__ = ()
    #: Keys that the record's JSON always holds beside its fields, written first (a
    #: document's ``schema_version``, say), as a class constant.
    json_constants: ClassVar[Mapping[str, JsonValue]] = {}

    def to_dict(self) -> JsonObject:
        """The record's JSON form (see :mod:`epsstar.plumbing.records.json_records`)."""
        return to_json(self)


def _rule(field: dataclasses.Field[Any]) -> JsonFieldRule:
    rule = field.metadata.get(_METADATA_KEY)
    return rule if isinstance(rule, JsonFieldRule) else JsonFieldRule()


def _properties(record_type: type) -> list[tuple[str, _JsonProperty]]:
    """The record's JSON properties in definition order; each names a field to follow."""
    found: dict[str, _JsonProperty] = {}
    for klass in reversed(record_type.__mro__):
        for attribute, value in vars(klass).items():
            if isinstance(value, _JsonProperty):
                found[attribute] = value
    names = {field.name for field in dataclasses.fields(record_type)}
    for attribute, made in found.items():
        if made.after is not None and made.after not in names:
            raise TypeError(
                f"{record_type.__name__}.{attribute} is written after {made.after!r}, "
                "which is not one of its fields."
            )
    return list(found.items())


def _is_empty(value: object) -> bool:
    return isinstance(value, (Mapping, list, tuple, str)) and len(value) == 0


def _is_default(field: dataclasses.Field[Any], value: object) -> bool:
    """Whether ``value`` equals the default of ``field`` (which must have one)."""
    if field.default is not dataclasses.MISSING:
        return bool(value == field.default)
    if field.default_factory is not dataclasses.MISSING:
        return bool(value == field.default_factory())
    raise TypeError(f"{field.name} is left out at its default, but it has no default.")


def to_json(record: object) -> JsonObject:
    """The JSON object of a dataclass record: its fields by their rules, then each
    ``json_property`` after the field it names (or at the end)."""
    if not dataclasses.is_dataclass(record) or isinstance(record, type):
        raise TypeError(f"to_json needs a dataclass instance. Found {type(record).__name__}.")
    properties = _properties(type(record))
    found: JsonObject = dict(getattr(record, "json_constants", {}))

    def add_properties(after: str | None) -> None:
        for attribute, made in properties:
            if made.after != after:
                continue
            value = getattr(record, attribute)
            if value is None and made.omit_if_none:
                continue
            found[made.json_name or attribute] = to_json_value(value)

    for field in dataclasses.fields(record):
        rule = _rule(field)
        if not rule.skip:
            value = getattr(record, field.name)
            if rule.flatten:
                if value is not None:
                    nested = to_json_value(value)
                    if not isinstance(nested, dict):
                        raise TypeError(f"{field.name}: only an object can be flattened.")
                    found.update(nested)
            elif not (
                (value is None and rule.omit_if_none)
                or (rule.omit_if_empty and _is_empty(value))
                or (rule.omit_if_default and _is_default(field, value))
            ):
                written = None if rule.empty_as_none and _is_empty(value) else value
                found[rule.name or field.name] = to_json_value(written)
        add_properties(field.name)
    add_properties(None)
    return found


def to_json_value(value: object) -> JsonValue:
    """A value's JSON form: records by their own ``to_dict``, NaN as ``null``."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, enum.Enum):
        return to_json_value(value.value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict) and not isinstance(value, type):
        return cast("JsonValue", to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_json(value)
    if isinstance(value, Mapping):
        return {str(key): to_json_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_value(item) for item in value]
    fspath = getattr(value, "__fspath__", None)
    if callable(fspath):
        return str(fspath())
    tolist = getattr(value, "tolist", None)  # a NumPy scalar or array
    if callable(tolist):
        return to_json_value(tolist())
    raise TypeError(f"No JSON form for a {type(value).__name__}: {value!r}.")


def json_keys(record_type: type) -> tuple[str, ...]:
    """The keys a record type's JSON may hold, in the order :func:`to_json` writes them
    (a flattened field lends the keys of its annotated record type)."""
    if not dataclasses.is_dataclass(record_type):
        raise TypeError(f"json_keys needs a dataclass type. Found {record_type!r}.")
    properties = _properties(record_type)
    keys: list[str] = list(getattr(record_type, "json_constants", {}))

    def add_properties(after: str | None) -> None:
        keys.extend(made.json_name or name for name, made in properties if made.after == after)

    for field in dataclasses.fields(record_type):
        rule = _rule(field)
        if rule.flatten:
            keys.extend(json_keys(_record_type(_annotation(record_type, field))))
        elif not rule.skip:
            keys.append(rule.name or field.name)
        add_properties(field.name)
    add_properties(None)
    return tuple(keys)


def _annotation(record_type: type, field: dataclasses.Field[Any]) -> object:
    """A field's annotation, evaluated in its record's module: only the flattened fields'
    are, so that a record may annotate others with names it imports for type checking."""
    if not isinstance(field.type, str):
        return field.type
    module = sys.modules[record_type.__module__]
    return eval(field.type, vars(module))


def _record_type(hint: object) -> type:
    """The record type of a field's annotation (``X`` or ``X | None``)."""
    if isinstance(hint, type):
        return hint
    candidates = [arg for arg in typing.get_args(hint) if isinstance(arg, type)]
    records = [arg for arg in candidates if dataclasses.is_dataclass(arg)]
    if len(records) != 1:
        raise TypeError(f"Cannot flatten a field annotated {hint!r}.")
    return records[0]
