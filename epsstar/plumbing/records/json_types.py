"""The JSON form of the records: what each ``to_dict()`` returns and a JSON file holds.

A record's ``to_dict()`` is its JSON document (``json.dumps`` writes it as is): strings,
numbers, booleans, ``null``, arrays and objects, nested to any depth. The aliases state
that, so a reader of a ``to_dict()`` knows what it may find in it; the same aliases type
a document read back (``json.loads``, ``tomllib.loads``), narrowed with ``isinstance``.
"""

from __future__ import annotations

from typing import TypeAlias

__all__ = ["JsonObject", "JsonValue"]

#: Any JSON value.
JsonValue: TypeAlias = str | int | float | bool | list["JsonValue"] | dict[str, "JsonValue"] | None
#: A JSON object: what a record's ``to_dict()`` returns.
JsonObject: TypeAlias = dict[str, JsonValue]
