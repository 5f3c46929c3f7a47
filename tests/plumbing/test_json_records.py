"""Records write their JSON from their fields: renames, omissions, derived values, NaN."""

from __future__ import annotations

import enum
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from epsstar.plumbing.records.json_records import (
    JsonRecord,
    json_keys,
    json_property,
    json_rule,
    to_json,
    to_json_value,
)


class Colour(enum.Enum):
    RED = "red"


@dataclass(frozen=True, slots=True)
class Inner(JsonRecord):
    a: int
    b: float = math.nan


@dataclass(frozen=True, slots=True)
class Outer(JsonRecord):
    first: float = field(metadata=json_rule(name="renamed"))
    inner: Inner = field(metadata=json_rule(flatten=True))
    maybe: int | None = field(default=None, metadata=json_rule(omit_if_none=True))
    scores: tuple[float, ...] = field(default=(), metadata=json_rule(empty_as_none=True))
    notes: tuple[str, ...] = field(default=(), metadata=json_rule(omit_if_empty=True))
    hidden: object = field(default=None, metadata=json_rule(skip=True))
    colour: Colour = Colour.RED
    where: Path = Path("/x/y")
    last: int = field(default=0, kw_only=True)

    @json_property(after="first")
    def doubled(self) -> float:
        return 2 * self.first

    @json_property()
    def total(self) -> int:
        return self.inner.a + self.last


def test_a_record_writes_its_fields_by_their_rules_in_order() -> None:
    record = Outer(first=1.5, inner=Inner(3), scores=(), hidden=object(), last=4)
    assert list(record.to_dict().items()) == [
        ("renamed", 1.5),
        ("doubled", 3.0),
        ("a", 3),
        ("b", None),
        ("scores", None),
        ("colour", "red"),
        ("where", "/x/y"),
        ("last", 4),
        ("total", 7),
    ]


def test_a_property_after_an_unknown_field_is_refused() -> None:
    # ``after`` names a field, not a key: "renamed" is the first field's key.
    @dataclass(frozen=True)
    class Placed(JsonRecord):
        first: float = field(metadata=json_rule(name="renamed"))

        @json_property(after="renamed")
        def doubled(self) -> float:
            return 2 * self.first

    with pytest.raises(TypeError, match="Placed.doubled is written after 'renamed'"):
        Placed(1.0).to_dict()
    with pytest.raises(TypeError, match="not one of its fields"):
        json_keys(Placed)


def test_the_keys_are_those_a_record_may_write() -> None:
    assert json_keys(Outer) == (
        "renamed",
        "doubled",
        "a",
        "b",
        "maybe",
        "scores",
        "notes",
        "colour",
        "where",
        "last",
        "total",
    )
    full = Outer(first=1.0, inner=Inner(1), maybe=2, scores=(1.0,), notes=("n",))
    assert tuple(full.to_dict()) == json_keys(Outer)


@dataclass(frozen=True, slots=True)
class Flagged(JsonRecord):
    flag: bool = field(default=False, kw_only=True, metadata=json_rule(omit_if_default=True))
    tags: tuple[str, ...] = field(default_factory=tuple, metadata=json_rule(omit_if_default=True))
    value: int = 0


def test_a_field_at_its_default_can_be_left_out() -> None:
    assert Flagged().to_dict() == {"value": 0}
    assert list(Flagged(("t",), 1, flag=True).to_dict().items()) == [
        ("flag", True),
        ("tags", ["t"]),
        ("value", 1),
    ]


def test_leaving_out_a_default_needs_one() -> None:
    @dataclass(frozen=True)
    class NoDefault(JsonRecord):
        value: int = field(metadata=json_rule(omit_if_default=True))

    with pytest.raises(TypeError, match="value is left out at its default, but it has no default"):
        NoDefault(1).to_dict()


@dataclass(frozen=True, slots=True)
class Typed(JsonRecord):
    """A record with a field annotated by a name this module imports only to type-check."""

    inner: Inner = field(metadata=json_rule(flatten=True))
    checked: OnlyTypeChecked | None = None  # type: ignore[name-defined]  # noqa: F821


def test_the_keys_read_only_the_annotations_of_flattened_fields() -> None:
    assert json_keys(Typed) == ("a", "b", "checked")


def test_numpy_values_become_plain_json() -> None:
    value = to_json_value({"i": np.int64(3), "f": np.float32(0.5), "a": np.arange(2), "b": True})
    assert value == {"i": 3, "f": 0.5, "a": [0, 1], "b": True}
    assert json.dumps(value, allow_nan=False)


def test_what_has_no_json_form_is_named() -> None:
    with pytest.raises(TypeError, match="No JSON form for a object"):
        to_json_value(object())
    with pytest.raises(TypeError, match="dataclass instance"):
        to_json(Inner)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_every_float_is_valid_json(value: float) -> None:
    written = Inner(1, value).to_dict()
    json.dumps(written, allow_nan=False)
    assert written["b"] == (value if math.isfinite(value) else None)
