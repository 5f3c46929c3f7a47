"""Loading a model through its loader plugin, with the class labels of its outputs.

:func:`load_model` resolves the plugin (:mod:`.plugins`: by name, else by the file's
suffix), loads the file and settles the class labels of the output columns: those given,
else those the model file states, else the column order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from epsstar.audit.model.plugins import LoadedModel, LoaderInfo, OutputKind
from epsstar.exceptions import InvalidInputError

__all__ = ["ClassesFrom", "LoadedAuditModel", "load_model"]

ClassesFrom = Literal["model", "argument", "column order"]


@dataclass(frozen=True, slots=True)
class LoadedAuditModel:
    """A loaded model, the plugin that loaded it, and the class labels of its outputs.

    ``classes`` are in output-column order (``None``: 0..K−1, the column order);
    ``classes_from`` says where they come from: ``"argument"``, ``"model"`` or
    ``"column order"``.
    """

    model: LoadedModel
    loader: LoaderInfo
    classes: tuple[object, ...] | None
    classes_from: ClassesFrom


def load_model(
    path: Path,
    *,
    loader: str | None = None,
    outputs: OutputKind | None = None,
    trust: bool = False,
    classes: Sequence[object] | None = None,
) -> LoadedAuditModel:
    """Load ``path`` with the loader called ``loader`` (default: chosen by its suffix).

    The class labels are ``classes`` when given, else those the model file states.
    """
    from epsstar.audit.model.plugins import get_loader, loader_for_path

    plugin, info = get_loader(loader) if loader else loader_for_path(path)
    model = plugin.load(path, outputs=outputs, trust=trust)
    if classes is not None:
        if isinstance(classes, (str, bytes)) or not len(classes):
            raise InvalidInputError(
                f"classes must be a non-empty sequence of class labels. Found {classes!r}."
            )
        return LoadedAuditModel(model, info, tuple(classes), "argument")
    if model.classes is not None:
        return LoadedAuditModel(model, info, tuple(model.classes), "model")
    return LoadedAuditModel(model, info, None, "column order")
