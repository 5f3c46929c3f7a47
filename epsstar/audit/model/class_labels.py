"""How a model file records the class labels of its output columns.

A network exported to ONNX or TorchScript outputs one column per class (one column,
``P(y = classes[1])``, for a binary model) without naming the classes. An exporter can
name them under the key :data:`CLASSES_KEY` (``"epsstar.classes"``), whose value is a JSON
array of the labels in output-column order, e.g. ``["no", "yes"]`` or ``[0, 1, 2]``:

* ONNX: a ``metadata_props`` entry of the model
  (``onnx.helper.set_model_props(model, {"epsstar.classes": "[...]"})``);
* TorchScript: an extra file of the archive
  (``torch.jit.save(module, path, _extra_files={"epsstar.classes": "[...]"})``).

The built-in loaders read it into ``LoadedModel.classes``, so that the audit matches the
data's labels to the right columns, as it does with a scikit-learn model's ``classes_``.

The names of the input columns, in the order the model takes them, are recorded the same
way under :data:`FEATURES_KEY` (``"epsstar.features"``, a JSON array of strings); the
loaders read them into ``LoadedModel.feature_names``, so that the audit hands the data's
columns over by name, as it does with a scikit-learn model's ``feature_names_in_``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.plumbing.files.input_bounds import shown
from epsstar.plumbing.files.json_parsing import parse_json

__all__ = [
    "CLASSES_KEY",
    "FEATURES_KEY",
    "OUTPUTS_KEY",
    "classes_from_text",
    "classes_to_text",
    "features_from_text",
    "features_to_text",
]

CLASSES_KEY: Final = "epsstar.classes"
"""The metadata key (ONNX) or extra-file name (TorchScript) holding the class labels."""

FEATURES_KEY: Final = "epsstar.features"
"""The metadata key (ONNX) or extra-file name (TorchScript) holding the input column names."""

OUTPUTS_KEY: Final = "epsstar.outputs"
"""The extra file (TorchScript, torch.export) stating what the module returns
(``"logits"`` or ``"probabilities"``)."""

Label = str | int | float | bool


def classes_to_text(classes: Sequence[Label]) -> str:
    """The JSON text stored under :data:`CLASSES_KEY`: the labels in output-column order."""
    return json.dumps([_plain(label) for label in classes], ensure_ascii=False)


def classes_from_text(text: str | bytes, source: object) -> tuple[Label, ...] | None:
    """The labels stored under :data:`CLASSES_KEY`; ``None`` for an empty value.

    ``source`` names the model file in the error raised for a value that is not a
    non-empty JSON array of strings, numbers or booleans.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not text.strip():
        return None
    try:
        labels: Any = parse_json(text, str(source))
    except InputFileError:
        labels = None
    if (
        not isinstance(labels, list)
        or not labels
        or not all(isinstance(label, (str, int, float)) for label in labels)
    ):
        raise InputFileError(
            f"{source}: the {CLASSES_KEY!r} metadata must be a non-empty JSON array of class "
            f"labels (strings or numbers). Found {shown(text, 80)}."
        )
    return tuple(labels)


def _plain(label: object) -> Label:
    """A label as a JSON value: numpy scalars become Python ones; other types are refused."""
    value = label.item() if hasattr(label, "item") and not isinstance(label, str) else label
    if not isinstance(value, (str, int, float)):
        raise InvalidInputError(
            f"class labels must be strings or numbers to be recorded. Found {label!r}."
        )
    return value


def features_to_text(names: Sequence[str]) -> str:
    """The JSON text stored under :data:`FEATURES_KEY`: the input column names in order."""
    if isinstance(names, str) or not all(isinstance(name, str) for name in names):
        raise InvalidInputError(
            f"feature names must be a sequence of strings to be recorded. Found {names!r}."
        )
    return json.dumps(list(names), ensure_ascii=False)


def features_from_text(text: str | bytes, source: object) -> tuple[str, ...] | None:
    """The names stored under :data:`FEATURES_KEY`; ``None`` for an empty value.

    A value that is not a non-empty JSON array of distinct strings is refused, naming
    ``source`` (the model file).
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not text.strip():
        return None
    try:
        names: Any = parse_json(text, str(source))
    except InputFileError:
        names = None
    if (
        not isinstance(names, list)
        or not names
        or not all(isinstance(name, str) for name in names)
        or len(set(names)) != len(names)
    ):
        raise InputFileError(
            f"{source}: the {FEATURES_KEY!r} metadata must be a non-empty JSON array of "
            f"distinct column names. Found {shown(text, 80)}."
        )
    return tuple(names)
