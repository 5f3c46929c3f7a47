"""The bound on every structured input file, and on the values its errors quote.

A structured file (a configuration, a manifest, an ``MLmodel`` descriptor, a model folder's
``config.json``, an adapter's configuration, a weights index, the JSON a model file embeds)
is read whole into memory and parsed, so its cost is bounded here, once, for every reader:

* at most :data:`MAX_BYTES` bytes, checked before the file is read
  (``{what} must be at most 67,108,864 bytes. Found 70,000,000 in 'file'.``);
* at most :data:`MAX_DEPTH` levels of nesting, counted without recursion after parsing
  (a parser that recurses deeper, as ``json`` does, gives the same one-line error;
  JSON is parsed by :mod:`.json_parsing`);
* YAML without anchors and aliases: an alias repeats a node wherever it is named, so a few
  hundred bytes can stand for more values than memory holds (the "billion laughs" file),
  and no configuration epsstar reads needs one;
* a value an error quotes is cut to a few dozen characters by :func:`shown`, so that no
  message formats an unbounded value.

Large data (tables, weights, the records of a JSON Lines file) are streamed by their own
readers and are not bounded here.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from epsstar.exceptions import InputFileError

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "integer_too_long",
    "nested_too_deep",
    "parse_yaml_text",
    "read_text",
    "read_yaml_file",
    "shown",
]

#: Deepest nesting of lists and tables a structured file may have (the deepest epsstar
#: writes, an ``audit-many --json`` record, has 7 levels).
MAX_DEPTH: Final = 64
#: Largest structured file read, in bytes.
MAX_BYTES: Final = 64 * 2**20


def shown(value: object, width: int = 60) -> str:
    """The value as a message ends with it: ``repr`` cut to ``width`` characters, and a
    list or table described by its size (never ``repr``'d whole)."""
    if isinstance(value, Mapping):
        keys = ", ".join(_cut(repr(key), 20) for key in list(value)[:5])
        return _cut(f"a table with keys {keys}" if value else "an empty table", width)
    if isinstance(value, list | tuple):
        if len(value) <= 8 and all(isinstance(item, str | int | float | None) for item in value):
            return _cut(repr(list(value)), width)
        return f"a list of {len(value)} item{'s' * (len(value) != 1)}"
    return _cut(repr(value), width)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else f"{text[: width - 14]}... ({len(text)} chars)"


def nested_too_deep(place: str, limit: int = MAX_DEPTH) -> InputFileError:
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


def read_text(path: str | Path, what: str, *, max_bytes: int = MAX_BYTES) -> str:
    """The UTF-8 text of the file ``path`` (a byte-order mark dropped), at most ``max_bytes``
    long; ``what`` names it in the errors."""
    file = Path(path)
    try:
        if file.is_dir():
            raise InputFileError(f"{what} must be a file, not a directory. Found {str(file)!r}.")
        size = file.stat().st_size
        if size > max_bytes:
            raise InputFileError(
                f"{what} must be at most {max_bytes:,} bytes. Found {size:,} in {str(file)!r}."
            )
        return file.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise InputFileError(f"{what}: no such file. Found {str(file)!r}.") from None
    except UnicodeDecodeError as error:
        byte = error.object[error.start : error.start + 1].hex()
        raise InputFileError(
            f"{file}: {what} must be UTF-8 text. Found the byte 0x{byte} at offset "
            f"{error.start}, which is not."
        ) from None
    except OSError as error:
        raise InputFileError(
            f"{what}: cannot read ({error.strerror or error}). Found {str(file)!r}."
        ) from None


def parse_yaml_text(text: str, source: str, yaml: Any) -> Any:
    """``yaml.safe_load`` of a document without anchors or aliases, within
    :data:`MAX_DEPTH`; its errors as one line naming ``source``. ``yaml`` is PyYAML's module,
    imported by the caller (an optional dependency)."""
    try:
        depth = 0
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise InputFileError(
                    f"{source}: must be YAML without anchors or aliases (&name, *name), "
                    f"which can stand for more values than memory holds. Found "
                    f"{shown(getattr(event, 'anchor', None))}."
                )
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise nested_too_deep(source)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        problem = getattr(error, "problem", None) or type(error).__name__
        raise InputFileError(f"{source}: must be readable YAML. Found {shown(problem)}.") from None


def read_yaml_file(path: str | Path, what: str, yaml: Any) -> Any:
    """The YAML document in ``path``, within the bounds of :func:`parse_yaml_text` and
    :data:`MAX_BYTES`."""
    return parse_yaml_text(read_text(path, what), str(path), yaml)
