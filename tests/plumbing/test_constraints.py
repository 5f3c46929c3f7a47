"""The constraints an options record declares on its fields: each refusal one line naming the
field and ending with the value, each accepted value kept as checked."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pytest

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.constraints import (
    ColumnName,
    Constraint,
    EachOf,
    InRange,
    Maybe,
    OneOf,
    WholeNumber,
    check_fields,
    constraint,
    constraints_of,
)

REFUSED: list[tuple[Constraint[object], object, str]] = [
    (InRange(0.0, 0.5), 0.7, "x must be in (0, 0.5). Found 0.7."),
    (InRange(0.0, 0.5), 0.0, "x must be in (0, 0.5). Found 0.0."),
    (InRange(0.0, 0.5, "left"), 0.5, "x must be in [0, 0.5). Found 0.5."),
    (InRange(0.0, 1.0, "both"), 1.5, "x must be in [0, 1]. Found 1.5."),
    (InRange(0.0, math.inf), math.inf, "x must be in (0, inf). Found inf."),
    (InRange(0.0, math.inf, "left"), math.nan, "x must be in [0, inf). Found nan."),
    (InRange(0.0, 1.0), "half", "x must be a number. Found 'half'."),
    (InRange(0.0, 1.0), None, "x must be a number. Found None."),
    (WholeNumber(), 0, "x must be an integer ≥ 1. Found 0."),
    (WholeNumber(minimum=2), 1.5, "x must be an integer ≥ 2. Found 1.5."),
    (WholeNumber(minimum=0), True, "x must be an integer ≥ 0. Found True."),
    (WholeNumber(), "3", "x must be an integer ≥ 1. Found '3'."),
    (OneOf(("a", "b")), "c", "x must be one of a, b. Found 'c'."),
    (OneOf(("a", "b")), 1, "x must be one of a, b. Found 1."),
    (ColumnName(), "", "x must name a column. Found ''."),
    (ColumnName(), 3, "x must name a column. Found 3."),
    (Maybe(WholeNumber()), -1, "x must be an integer ≥ 1. Found -1."),
    (EachOf(WholeNumber()), (4, 0), "x must be an integer ≥ 1. Found 0."),
    (EachOf(ColumnName()), "ab", "x must be a sequence. Found 'ab'."),
]


@pytest.mark.parametrize(("rule", "value", "message"), REFUSED)
def test_a_refusal_is_one_line_naming_the_option_and_the_value(
    rule: Constraint[object], value: object, message: str
) -> None:
    with pytest.raises(InvalidInputError) as refused:
        rule.check("x", value)
    assert str(refused.value) == message


ACCEPTED: list[tuple[Constraint[object], object, object]] = [
    (InRange(0.0, 0.5), "0.25", 0.25),
    (InRange(0.0, math.inf, "both"), math.inf, math.inf),
    (InRange(0.0, 1.0, "left"), 0, 0.0),
    (WholeNumber(), np.int64(3), 3),
    (OneOf(("a", "b")), "b", "b"),
    (Maybe(InRange(0.0, 1.0)), None, None),
    (EachOf(WholeNumber()), [64, 32], (64, 32)),
]


@pytest.mark.parametrize(("rule", "value", "kept"), ACCEPTED)
def test_an_accepted_value_is_kept_as_checked(
    rule: Constraint[object], value: object, kept: object
) -> None:
    checked = rule.check("x", value)
    assert checked == kept
    assert type(checked) is type(kept)


@dataclass(frozen=True, slots=True)
class _Options:
    size: int = field(default=1, metadata=constraint(WholeNumber()))
    share: float = field(default=0.5, metadata=constraint(InRange(0.0, 1.0)))
    note: str = "free"

    def __post_init__(self) -> None:
        check_fields(self)


def test_a_record_checks_its_fields_in_order_when_built_and_keeps_the_checked_values() -> None:
    with pytest.raises(InvalidInputError, match=r"^size must be an integer ≥ 1\. Found 0\.$"):
        _Options(size=0, share=2.0)
    with pytest.raises(InvalidInputError, match=r"^share must be in \(0, 1\)\. Found 2\.0\.$"):
        _Options(share=2.0)
    built = _Options(size=cast(Any, np.int64(2)), share=cast(Any, "0.25"))
    assert (type(built.size), built.share) == (int, 0.25)
    assert list(constraints_of(_Options)) == ["size", "share"]
