"""Reading JSON that came from outside: the one parser of every JSON and JSON Lines text
epsstar reads (configurations, model metadata, work folders, text records).

``json.loads`` fails in ways its callers do not expect from a parser: it recurses once per
level of nesting (a ``RecursionError`` for a document nested a few thousand levels deep),
refuses an integer longer than Python's limit on converting text to integers with a bare
``ValueError``, and returns strings holding lone surrogates (``"\\ud800"``), which no UTF-8
file, stream or tokenizer can carry further. :func:`parse_json` turns each into one
:class:`~epsstar.exceptions.InputFileError` line naming the file (and the line of a JSON
Lines file), and refuses nesting deeper than :data:`MAX_DEPTH`, counted without recursion.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping

from epsstar.exceptions import InputFileError
from epsstar.statistics.json_types import JsonValue

__all__ = ["MAX_DEPTH", "check_document", "integer_too_long", "nested_too_deep", "parse_json"]

#: Deepest nesting of lists and objects a document may have (the deepest epsstar writes, an
#: ``audit-many --json`` record, has 7 levels).
MAX_DEPTH = 64

_WIDTH = 60


def _cut(text: str) -> str:
    shown = repr(text)
    return shown if len(shown) <= _WIDTH else f"{shown[: _WIDTH - 14]}... ({len(shown)} chars)"


def nested_too_deep(place: str, limit: int) -> InputFileError:
    """The error of a document nested more than ``limit`` levels deep, found at ``place``."""
    return InputFileError(
        f"{place}: the top level must be nested at most {limit} levels deep. Found more than "
        f"{limit} levels."
    )


def integer_too_long(place: str) -> InputFileError:
    """The error of an integer beyond Python's limit on converting text, found at ``place``."""
    return InputFileError(
        f"{place}: integers must have at most {sys.get_int_max_str_digits():,} digits "
        "(Python's limit on reading an integer from text). Found a longer one."
    )


def _lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_document(document: JsonValue, place: str, limit: int = MAX_DEPTH) -> None:
    """Refuse nesting beyond ``limit`` (counted without recursion) and strings (keys too)
    holding lone surrogates, in a document read from ``place``."""
    stack: list[tuple[object, int]] = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            if _lone_surrogate(value):
                raise InputFileError(
                    f"{place}: strings must be Unicode text (a lone surrogate cannot be "
                    f"written as UTF-8). Found {_cut(value)}."
                )
            continue
        children: list[object]
        if isinstance(value, Mapping):
            children = [*value.keys(), *value.values()]
        elif isinstance(value, list):
            children = list(value)
        else:
            continue
        if children and depth >= limit:
            raise nested_too_deep(place, limit)
        stack.extend((child, depth + 1) for child in children)


def parse_json(
    text: str, source: str, *, line: int | None = None, limit: int = MAX_DEPTH
) -> JsonValue:
    """The JSON value of ``text`` read from ``source`` (at ``line`` of a JSON Lines file),
    nested at most ``limit`` levels deep; anything else is one line (module docstring)."""
    place = source if line is None else f"{source}, line {line}"
    try:
        document: JsonValue = json.loads(text)
    except RecursionError:
        raise nested_too_deep(place, limit) from None
    except ValueError as error:
        if "integer string conversion" in str(error):
            raise integer_too_long(place) from None
        raise InputFileError(f"{place}: must be JSON ({error}). Found {_cut(text)}.") from None
    check_document(document, place, limit)
    return document
