"""Labels matched to the classes of a model's outputs."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.data.tables.shared import _shown
from epsstar.exceptions import InvalidInputError


def _as_python(value: object) -> object:
    return value.item() if isinstance(value, np.generic) else value


def _numeric_key(value: object) -> float | None:
    """A label as a number (1, 1.0, "1", "1.0", True all give 1.0), or None if it is not one."""
    value = _as_python(value)
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in ("true", "false"):
            return 1.0 if text.lower() == "true" else 0.0
        try:
            return float(text)
        except ValueError:
            return None
    if isinstance(value, (bool, int, float)):
        return float(value)
    return None


def _text_key(value: object) -> str:
    """A label as text, with whole-number floats written as integers ("1.0" -> "1")."""
    value = _as_python(value)
    if isinstance(value, bytes):
        return value.decode(errors="replace").strip()
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


#: The option naming the classes of a model's outputs, in order, when its file records none.
CLASS_LABELS_OPTION: Final = "--class-labels"
#: The same for one model of an ``audit-many`` manifest: its column (CSV) or key (TOML).
MANIFEST_CLASS_LABELS: Final = "a class_labels column"


@dataclass(frozen=True, slots=True)
class LabelMap:
    """The model's classes, in the order of its output columns, and how raw labels match them.

    When every class is a number (booleans count as 0/1), labels are compared
    as numbers: ``1``, ``1.0``, ``"1"``, ``"1.0"`` and ``True`` all match class
    ``1``. Otherwise labels are compared as text, with surrounding spaces removed
    and whole-number floats written as integers (``1.0`` matches class ``"1"``).
    """

    classes: tuple[object, ...]
    #: Whether the classes are the model's own (``False``: ``0 … K−1`` stand in for labels
    #: the model file does not record, and a refusal says how to name them).
    named: bool = field(default=True, compare=False)
    numeric: bool = field(init=False, repr=False, compare=False)
    _lookup: dict[object, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        classes = tuple(_as_python(value) for value in self.classes)
        if not classes:
            raise InvalidInputError("classes must hold at least one class. Found none.")
        numeric = all(isinstance(value, (bool, int, float)) for value in classes)
        keys: list[object] = []
        for value in classes:
            if numeric:
                number = _numeric_key(value)
                if number is None or math.isnan(number):
                    raise InvalidInputError(f"classes must not be missing. Found {value!r}.")
                keys.append(number)
            else:
                keys.append(_text_key(value))
        lookup: dict[object, int] = {}
        for index, key in enumerate(keys):
            if key in lookup:
                raise InvalidInputError(
                    f"classes must be distinct. Found {classes[lookup[key]]!r} and "
                    f"{classes[index]!r}, which compare equal."
                )
            lookup[key] = index
        object.__setattr__(self, "classes", classes)
        object.__setattr__(self, "numeric", numeric)
        object.__setattr__(self, "_lookup", lookup)

    def __len__(self) -> int:
        return len(self.classes)

    def encode(
        self, raw: NDArray[Any] | Sequence[object], *, source: str | None = None
    ) -> NDArray[np.int64]:
        """Class indices 0..K−1 of ``raw`` labels; unknown or missing labels raise, naming
        ``source`` (the file and column they come from) when given."""
        where = f"{source}: " if source else ""
        import pandas as pd

        values = np.asarray(raw)
        if values.ndim != 1:
            values = values.reshape(-1)
        if values.dtype.kind == "S":
            values = np.char.decode(values, "utf-8", errors="replace")
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        table = np.empty(len(uniques), dtype=np.int64)
        unknown: list[object] = []
        for position, value in enumerate(uniques):
            key = _numeric_key(value) if self.numeric else _text_key(value)
            index = self._lookup.get(key, -1) if key is not None else -1
            table[position] = index
            if index < 0:
                unknown.append(_as_python(value))
        if (codes < 0).any():
            first = int(np.flatnonzero(codes < 0)[0])
            raise InvalidInputError(
                f"{where}labels must not be missing. Found {values[first]} at index {first}."
            )
        if unknown:
            raise InvalidInputError(
                f"{where}labels must be classes of the model ({_shown(list(self.classes))})"
                f"{self._naming_hint(unknown)}. Found "
                f"{len(unknown)} unknown label value(s): {_shown(unknown, 5)}."
            )
        return np.ascontiguousarray(table[codes], dtype=np.int64)

    def _naming_hint(self, unknown: Sequence[object]) -> str:
        """How to name the classes of a model that records none, for the refusal of
        ``unknown`` labels (the sorted labels when they are as many as the classes: the
        order of the scikit-learn wrappers of LightGBM and XGBoost, whose label encoder
        sorts them)."""
        if self.named:
            return ""
        hint = (
            f"; the model file records no class labels: pass {CLASS_LABELS_OPTION} with them "
            f"in the order of its outputs (in an audit-many manifest, {MANIFEST_CLASS_LABELS})"
        )
        if len(unknown) != len(self.classes):
            return hint
        ordered = ",".join(sorted(str(value) for value in unknown))
        return (
            f"{hint} (sorted, as LightGBM and XGBoost number them: {CLASS_LABELS_OPTION} {ordered})"
        )


def label_map_for(model_classes: Sequence[object] | None, n_outputs: int) -> LabelMap:
    """The :class:`LabelMap` of a model with ``n_outputs`` output columns.

    ``model_classes`` are the classes in output-column order (as a scikit-learn
    ``classes_``); ``None`` means 0..K−1. A single output column is a binary
    model with two classes.
    """
    if isinstance(n_outputs, bool) or not isinstance(n_outputs, (int, np.integer)):
        raise InvalidInputError(f"n_outputs must be an integer ≥ 1. Found {n_outputs!r}.")
    if n_outputs < 1:
        raise InvalidInputError(f"n_outputs must be an integer ≥ 1. Found {n_outputs}.")
    expected = 2 if n_outputs == 1 else int(n_outputs)
    if model_classes is None:
        return LabelMap(tuple(range(expected)), named=False)
    classes = tuple(np.asarray(model_classes, dtype=object).reshape(-1).tolist())
    if len(classes) != expected:
        raise InvalidInputError(
            f"model classes (those the model file records, or {CLASS_LABELS_OPTION}) must "
            f"number {expected} for {n_outputs} output column(s). Found {len(classes)}: "
            f"{_shown(list(classes))}."
        )
    return LabelMap(classes)
