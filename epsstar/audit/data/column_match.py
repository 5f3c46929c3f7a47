"""Which columns of a data file a model receives, in which order and under which names.

A model that records the names of its inputs (a scikit-learn estimator's
``feature_names_in_``, per-column ONNX inputs, the names an exporter stored under
:data:`epsstar.audit.model.class_labels.FEATURES_KEY`) gets the file's columns **by name**, in
its own order, whatever the file's order: handing them over by position would audit a
different function of the data without any error (a column swap once turned an Epsilon*
of 7.2 into 0.05). The rules, in order:

1. ``features`` given (``--features``): those file columns, in that order; when the model
   records names there must be one per name, and they are handed over under the
   model's names (the explicit override for files whose names differ);
2. the model records names: each is looked up in the file exactly, else as the one
   column whose name is the same once every character other than a letter or digit is
   replaced by ``_`` (skl2onnx turns ``education-num`` into ``education_num``), else the
   same ignoring case; a name with no such column is refused, naming it;
3. the model records names but the file records none (an NPZ ``X`` without ``columns``,
   an NPY array, whose columns the reader names ``x0, x1, …`` or ``0, 1, …``): every
   column but the label **by position**, under the model's names, when there are as many
   as the model has inputs (the audit says so and warns, as below); otherwise refused,
   naming both counts and ``--features``;
4. neither: every column but the label, in file order, **by position**; the audit says so
   in its result and warns when there are two or more columns.

A release gate never passes on a guess: with a limit, a match by position of two or more
columns is refused (:meth:`ColumnMatch.refuse_guess`, exit 2 naming ``--features``) unless
the user states that the file's order is the model's (``--match-columns-by-position``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule

__all__ = [
    "BY_POSITION_OPTION",
    "ColumnMatch",
    "ColumnPair",
    "ColumnsFrom",
    "match_columns",
    "match_model_columns",
    "sanitised",
]

ColumnsFrom = Literal["model names", "features option", "position"]

_SHOWN = 8
#: The option by which a user states that the file's column order is the model's.
BY_POSITION_OPTION = "--match-columns-by-position"


def sanitised(name: str) -> str:
    """``name`` with every character other than an ASCII letter or digit replaced by ``_``."""
    return re.sub(r"[^0-9A-Za-z]", "_", name)


def _shown(items: Sequence[str]) -> str:
    text = ", ".join(repr(item) for item in items[:_SHOWN])
    return text + (f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else "")


@dataclass(frozen=True, slots=True)
class ColumnPair(JsonRecord):
    """One input of the model: the file's column and the name the model receives it under."""

    file: str
    model: str


@dataclass(frozen=True, slots=True)
class ColumnMatch(JsonRecord):
    """The file's columns a model receives (``file_columns``, in the model's order), the
    names it receives them under (``model_names``) and how they were matched; its JSON
    (``columns_from`` and ``columns``) is part of the provenance."""

    file_columns: tuple[str, ...] = field(metadata=json_rule(skip=True))
    model_names: tuple[str, ...] = field(metadata=json_rule(skip=True))
    source: ColumnsFrom = field(metadata=json_rule(name="columns_from"))
    #: Which side records no column names when they are matched by position.
    unnamed: Literal["model", "data"] = field(default="model", metadata=json_rule(skip=True))

    @json_property()
    def columns(self) -> tuple[ColumnPair, ...]:
        """Each input of the model with the file's column it receives, in the model's order."""
        return tuple(
            ColumnPair(file, model)
            for file, model in zip(self.file_columns, self.model_names, strict=True)
        )

    @property
    def renamed(self) -> bool:
        """Whether any column reaches the model under another name than the file's."""
        return self.file_columns != self.model_names

    @property
    def guessed(self) -> bool:
        """Whether two or more columns reach the model by position alone (an order nobody
        stated: the model or the file records no names and ``--features`` was not given)."""
        return self.source == "position" and len(self.file_columns) >= 2

    def refuse_guess(self, model: Path, *, gate: bool, by_position: bool) -> None:
        """Refuse a release gate on columns matched by position, unless ``by_position``
        says the file's order is the model's: a wrong order gives a wrong Epsilon* (0.000
        instead of 7.239 once) that a gate would pass without a word."""
        if not gate or by_position or not self.guessed:
            return
        raise InvalidInputError(
            f"a release gate needs the model's column order stated: {self._why(model)}, so "
            f"its inputs would get the data's columns by position. Pass "
            f"--features with the file's columns in the model's order, or "
            f"{BY_POSITION_OPTION} to accept the file's order. Found "
            f"{len(self.file_columns)} columns ({_shown(self.file_columns)})."
        )

    def _why(self, model: Path) -> str:
        """Why the columns are matched by position: which side records no names."""
        if self.unnamed == "data":
            return f"the data file records no column names for the inputs {model.name} names"
        return f"{model.name} records no column names"

    def position_warning(self, model: Path) -> str | None:
        """The warning for columns matched by position (None when it does not apply)."""
        if not self.guessed:
            return None
        return (
            f"columns are matched by position: {self._why(model)}, so "
            f"its inputs get the data's {len(self.file_columns)} columns in file order "
            f"({_shown(self.file_columns)}); if that is not the order it was trained on, "
            f"Epsilon* is wrong. Pass --features to state the order"
        )


def _by_name(
    wanted: Sequence[str], available: Sequence[str], model: Path, data: Path
) -> tuple[str, ...]:
    """The file column for each of the model's names (exact, sanitised, then any case)."""
    exact = set(available)
    keys = (sanitised, lambda name: sanitised(name).lower())
    found: list[str] = []
    missing: list[str] = []
    for name in wanted:
        if name in exact:
            found.append(name)
            continue
        for key in keys:
            candidates = [column for column in available if key(column) == key(name)]
            if len(candidates) == 1:
                found.append(candidates[0])
                break
        else:
            missing.append(name)
    if missing:
        raise InputFileError(
            f"{data}: must have the columns {model.name} takes as its inputs (by name), or "
            f"--features must name the file's columns in the model's order; missing "
            f"{_shown(missing)}. Found columns {_shown(list(available))}."
        )
    repeated = [column for column in found if found.count(column) > 1]
    if repeated:
        raise InputFileError(
            f"{data}: each of {model.name}'s inputs must match its own column; pass "
            f"--features to name them. Found {repeated[0]!r} matching several inputs."
        )
    return tuple(found)


def _unnamed_data(
    candidates: tuple[str, ...], names: tuple[str, ...], model: Path, data: Path
) -> ColumnMatch:
    """A file without column names against a model with names: by position when the counts
    agree, else refused."""
    if len(candidates) != len(names):
        raise InputFileError(
            f"{data}: records no column names, so its columns can reach {model.name}'s "
            f"{len(names)} named inputs ({_shown(list(names))}) only by position, one per "
            f"input; pass --features naming the file's columns in the model's order, or "
            f"save the names as a 'columns' array beside X. Found {len(candidates)} columns "
            f"({_shown(list(candidates))})."
        )
    return ColumnMatch(candidates, names, "position", unnamed="data")


def match_model_columns(
    model: object,
    available: Sequence[str],
    label_column: str,
    *,
    features: Sequence[str] | None,
    model_path: Path,
    data: Path,
    unnamed: Sequence[str] = (),
) -> ColumnMatch:
    """:func:`match_columns` with the input names a loaded ``model`` records (its
    ``feature_names``, when it has them)."""
    names = getattr(model, "feature_names", None)
    return match_columns(
        available,
        label_column,
        model_names=None if names is None else tuple(names),
        features=features,
        model=model_path,
        data=data,
        unnamed=unnamed,
    )


def match_columns(
    available: Sequence[str],
    label_column: str,
    *,
    model_names: Sequence[str] | None,
    features: Sequence[str] | None,
    model: Path,
    data: Path,
    unnamed: Sequence[str] = (),
) -> ColumnMatch:
    """Match the columns of a file (``available``) to a model's inputs by the rules of the
    module docstring; ``unnamed`` are the file's columns whose names the reader made up.
    The label column is never a feature."""
    candidates = [column for column in available if column != label_column]
    if features is not None:
        chosen = tuple(str(name) for name in features)
        if model_names is not None and len(chosen) != len(model_names):
            raise InvalidInputError(
                f"--features must name one column per input of {model.name}, which takes "
                f"{len(model_names)} ({_shown(list(model_names))}). Found {len(chosen)}."
            )
        names = tuple(model_names) if model_names is not None else chosen
        return ColumnMatch(chosen, names, "features option")
    if model_names is not None:
        names = tuple(str(name) for name in model_names)
        if candidates and set(candidates) <= set(unnamed):
            return _unnamed_data(tuple(candidates), names, model, data)
        return ColumnMatch(_by_name(names, candidates, model, data), names, "model names")
    return ColumnMatch(tuple(candidates), tuple(candidates), "position")
