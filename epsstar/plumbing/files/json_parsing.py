"""The one parser of every JSON and JSON Lines text epsstar reads from outside
(configurations, model metadata, Hugging Face folders, work folders, text records).

``json.loads`` fails in ways its callers do not expect from a parser: it recurses once per
level of nesting (a ``RecursionError`` for a document nested a few thousand levels deep),
refuses an integer longer than Python's limit on converting text to integers with a bare
``ValueError``, and returns strings holding lone surrogates (``"\\ud800"``), which no UTF-8
file, stream or tokenizer can carry further. :func:`parse_json` turns each into one
:class:`~epsstar.exceptions.InputFileError` line naming the file (and the line of a JSON
Lines file), and refuses nesting deeper than :data:`~.input_bounds.MAX_DEPTH`, counted without
recursion. :func:`read_json_file` reads a JSON file within the size bound of
:mod:`.input_bounds` first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from epsstar.exceptions import InputFileError
from epsstar.plumbing.files.input_bounds import (
    MAX_DEPTH,
    integer_too_long,
    nested_too_deep,
    read_text,
    shown,
)
from epsstar.plumbing.records.json_types import JsonValue

__all__ = ["check_document", "parse_json", "read_json_file"]


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
                    f"written as UTF-8). Found {shown(value)}."
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
        raise InputFileError(f"{place}: must be JSON ({error}). Found {shown(text)}.") from None
    check_document(document, place, limit)
    return document


def read_json_file(path: str | Path, what: str) -> JsonValue:
    """The JSON document in ``path``, within the size bound of :mod:`.input_bounds` and
    :data:`~.input_bounds.MAX_DEPTH`; ``what`` names it in the errors."""
    return parse_json(read_text(path, what), str(path))
