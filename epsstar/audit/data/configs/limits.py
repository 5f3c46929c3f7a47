"""The release gate's limits, kept in a reviewed file: ``[tool.epsstar]`` of a
``pyproject.toml`` or the top level of an ``epsstar.toml``.

A pipeline's limits belong in the repository beside the model, reviewed like code, not in
a shell script. The file holds a default limit and, optionally, limits for some models,
attacks or slices::

    [tool.epsstar]              # the top level in epsstar.toml
    max-epsilon = 1.0           # every model, attack and slice without a limit of its own
    warn-only = false           # report and annotate failed gates, exit 0

    [[tool.epsstar.limits]]
    model = "models/*.onnx"     # a glob over the model's path as given, or its file name
    attack = "lira"             # one attack's statistic
    max-epsilon = 2.0

    [[tool.epsstar.limits]]
    slice = "*"                 # every value of --slice-by ("*"), or one value
    max-epsilon = 3.0

A check's limit is that of the most specific entry that matches it (the one naming most
of model, attack and slice; the last of equals), else the default. Slices are checked only
where an entry names them. Every key is declared (:mod:`.config_schema`): an unknown one is
refused with the keys allowed, before any model is read.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Final

from epsstar.plumbing.files.input_bounds import read_text
from epsstar.plumbing.files.schema import (
    Flag,
    ListOf,
    Number,
    Table,
    Text,
    Where,
    parse_toml,
)

__all__ = ["CONFIG_NAMES", "Limit", "Limits", "find_limits", "read_limits"]

#: The files searched for limits in the working folder, in order.
CONFIG_NAMES: Final = ("epsstar.toml", "pyproject.toml")

_LIMIT = Number(low=0.0)
_NAME = Text(max_length=1024)
_ENTRY = Table(
    {"model": _NAME, "attack": _NAME, "slice": _NAME, "max-epsilon": _LIMIT},
    required=("max-epsilon",),
)
_ENTRIES = ListOf(_ENTRY, max_items=1000)
_WARN_ONLY = Flag()
#: The declared keys of ``[tool.epsstar]`` (or of ``epsstar.toml``).
SCHEMA: Final = Table({"max-epsilon": _LIMIT, "warn-only": _WARN_ONLY, "limits": _ENTRIES})


@dataclass(frozen=True, slots=True)
class Limit:
    """One entry: the limit of the checks it matches (``None`` matches anything)."""

    max_epsilon: float
    model: str | None = None
    attack: str | None = None
    slice: str | None = None

    @property
    def specificity(self) -> int:
        return sum(value is not None for value in (self.model, self.attack, self.slice))

    def matches(self, model: str, attack: str, slice_value: str | None) -> bool:
        """Whether the check of ``model`` (its path as given), ``attack`` and ``slice_value``
        (``None``: the whole data) falls under this entry."""
        if self.model is not None and not _model_matches(self.model, model):
            return False
        if self.attack is not None and self.attack != attack:
            return False
        if self.slice is None:
            return slice_value is None
        return slice_value is not None and self.slice in ("*", slice_value)


def _model_matches(pattern: str, model: str) -> bool:
    path = PurePath(model)
    return any(
        fnmatch.fnmatchcase(candidate, pattern) for candidate in (model, path.as_posix(), path.name)
    )


@dataclass(frozen=True, slots=True)
class Limits:
    """The default limit, the entries and the warn-only switch of a file (``source`` names
    it; ``None`` for limits from the command line alone)."""

    default: float | None = None
    entries: tuple[Limit, ...] = ()
    warn_only: bool = False
    source: str | None = None

    @property
    def slices_checked(self) -> bool:
        """Whether any entry names a slice (slices are checked only then)."""
        return any(entry.slice is not None for entry in self.entries)

    def limit(self, model: str, attack: str, slice_value: str | None = None) -> float | None:
        """The limit of one check (``None``: not gated)."""
        matching = [e for e in self.entries if e.matches(model, attack, slice_value)]
        if matching:
            return max(reversed(matching), key=lambda entry: entry.specificity).max_epsilon
        return None if slice_value is not None else self.default

    def for_model(self, model: str, attacks: Sequence[str]) -> float | None:
        """The limit the audit of ``model`` by ``attacks`` is run with (its JSON's
        ``max_epsilon``, its headline verdict): the smallest of the attacks' limits over the
        whole data, so the headline never passes where a check fails (``None``: none)."""
        found = [self.limit(model, attack) for attack in attacks]
        return min((limit for limit in found if limit is not None), default=None)

    def with_default(self, limit: float | None) -> Limits:
        """These limits with ``limit`` (``--max-epsilon``) as the default, when given."""
        if limit is None:
            return self
        return Limits(limit, self.entries, self.warn_only, self.source)


def _limits_of(table: object, where: Where) -> Limits:
    fields = SCHEMA.check(table, where)
    entries = tuple(
        Limit(
            entry.need("max-epsilon", _LIMIT),
            entry.get("model", _NAME),
            entry.get("attack", _NAME),
            entry.get("slice", _NAME),
        )
        for entry in fields.get("limits", _ENTRIES) or ()
    )
    warn_only: bool | None = fields.get("warn-only", _WARN_ONLY)
    return Limits(fields.get("max-epsilon", _LIMIT), entries, warn_only is True, where.source)


def read_limits(path: str | os.PathLike[str]) -> Limits | None:
    """The limits of ``path``: ``[tool.epsstar]`` of a ``pyproject.toml`` (``None`` when it
    has none), else the whole of a TOML file such as ``epsstar.toml``."""
    file = Path(path)
    where = Where(str(file))
    document = parse_toml(read_text(file, "the limits file"), where)
    if not isinstance(document, dict):  # pragma: no cover - a TOML document is a table
        raise where.error("a TOML table", document)
    if file.name == "pyproject.toml":
        tool = document.get("tool")
        table = tool.get("epsstar") if isinstance(tool, dict) else None
        if table is None:
            return None
        return _limits_of(table, Where(str(file), "tool.epsstar"))
    return _limits_of(document, where)


def find_limits(folder: str | os.PathLike[str] = ".") -> Limits | None:
    """The limits of the first of :data:`CONFIG_NAMES` in ``folder`` that holds any."""
    for name in CONFIG_NAMES:
        candidate = Path(folder) / name
        if candidate.is_file():
            found = read_limits(candidate)
            if found is not None:
                return found
    return None
