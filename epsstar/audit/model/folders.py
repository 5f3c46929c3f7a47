"""Model folders: an MLflow model folder read down to the one model file it holds.

An MLflow model folder (``mlflow.<flavor>.save_model`` / ``log_model``) is a directory with
an ``MLmodel`` file, documented YAML whose ``flavors`` mapping names, for each flavour, the
file (or sub-folder) holding the model relative to the folder: ``sklearn.pickled_model``
(``model.pkl``, or ``model.skops`` when ``serialization_format`` is ``skops``),
``onnx.data`` (``model.onnx``) and ``pytorch.model_data`` (``data/``, holding ``model.pt2``
from ``torch.export`` or ``model.pth`` pickled by ``torch.save``). See MLflow's "MLflow
Models" storage-format documentation.

Reading that YAML with ``yaml.safe_load`` and handing the named file to the matching
epsstar loader is sound without importing ``mlflow``: the flavour's file is the very file
MLflow's own ``load_model`` reads, so the model audited is the model MLflow would serve,
and each loader keeps its own safety rules (a pickle still needs trust; skops and ONNX do
not). Importing ``mlflow`` would instead load the model through pickle for every flavour it
pickles, and add a heavy dependency. ``safe_load`` builds only plain YAML values, so the
descriptor cannot run code; the descriptor is read within the bound of every structured
input file (:mod:`epsstar.plumbing.files.input_bounds`: its size, its nesting, no YAML aliases). The
flavour's path must stay inside the folder (:mod:`epsstar.audit.inputs.inside`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from epsstar.audit.inputs.inside import inside_folder
from epsstar.audit.model.plugins import import_optional
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.plumbing.files.input_bounds import read_yaml_file, shown
from epsstar.plumbing.records.json_records import JsonRecord, json_rule

__all__ = ["DESCRIPTOR", "ModelFolder", "model_folder"]

DESCRIPTOR: Final = "MLmodel"
"""The file that makes a directory an MLflow model folder."""

_FLAVORS: Final = ("onnx", "sklearn", "pytorch")
"""The flavours read, in the order preferred when a folder has several."""

_KNOWN: Final = "an MLflow model folder (an MLmodel file with an onnx, sklearn or pytorch flavour)"


@dataclass(frozen=True, slots=True)
class ModelFolder(JsonRecord):
    """A model folder and the one model file in it that the audit reads.

    ``format`` is ``"mlflow"``; ``descriptor`` the ``MLmodel`` file; ``flavor`` the MLflow
    flavour read; ``file`` the flavour's model file; ``loader`` the epsstar loader that
    reads it (``None``: by the file's suffix). Its JSON is ``provenance.model_folder``.
    """

    format: str
    folder: Path = field(metadata=json_rule(name="path"))
    descriptor: Path
    flavor: str
    file: Path
    loader: str | None = field(metadata=json_rule(skip=True))


def model_folder(folder: Path) -> ModelFolder:
    """The model file that the folder ``folder`` holds, read from its ``MLmodel`` file.

    A directory that is no known model folder, an ``MLmodel`` that is not a YAML mapping
    of flavours, a folder with no flavour epsstar reads, and a flavour path outside the
    folder are refused with one line naming what was expected.
    """
    descriptor = folder / DESCRIPTOR
    if not descriptor.is_file():
        raise InputFileError(
            f"model: a directory must be {_KNOWN}; save the model as one file otherwise. "
            f"Found {os.fspath(folder)!r} with no {DESCRIPTOR} file."
        )
    flavors = _flavors(descriptor)
    chosen = next((name for name in _FLAVORS if isinstance(flavors.get(name), dict)), None)
    if chosen is None:
        hint = (
            " A pyfunc-only folder runs Python code to predict: log the model with "
            "mlflow.sklearn (its predict_proba is then read), mlflow.onnx or mlflow.pytorch."
            if "python_function" in flavors
            else ""
        )
        raise InvalidInputError(
            f"model: the MLflow folder must have an onnx, sklearn or pytorch flavour.{hint} "
            f"Found flavours {sorted(str(name) for name in flavors)}."
        )
    settings = flavors[chosen]
    assert isinstance(settings, dict)
    file, loader = _flavor_file(folder, chosen, settings)
    return ModelFolder("mlflow", folder, descriptor, chosen, file, loader)


def _flavors(descriptor: Path) -> Mapping[object, object]:
    """The ``flavors`` mapping of an ``MLmodel`` file."""
    yaml = import_optional("yaml", loader="MLflow folder")
    document = read_yaml_file(descriptor, f"model: the MLflow {DESCRIPTOR} file", yaml)
    flavors = document.get("flavors") if isinstance(document, dict) else None
    if not isinstance(flavors, dict) or not flavors:
        raise InputFileError(
            f"model: the MLflow {DESCRIPTOR} file must hold a 'flavors' mapping. "
            f"Found {os.fspath(descriptor)!r}."
        )
    return flavors


def _flavor_file(
    folder: Path, flavor: str, settings: Mapping[object, object]
) -> tuple[Path, str | None]:
    """The model file the flavour's settings name, and the loader that reads it."""
    if flavor == "onnx":
        return _inside(folder, flavor, settings.get("data")), "onnx"
    if flavor == "sklearn":
        return _inside(folder, flavor, settings.get("pickled_model")), "sklearn"
    data = _inside(folder, flavor, settings.get("model_data"), directory=True)
    exported = data / "model.pt2"
    if exported.is_file():
        return _inside(folder, flavor, os.fspath(exported.relative_to(folder))), "torch-export"
    raise InvalidInputError(
        f"model: the MLflow pytorch folder must hold a torch.export program "
        f"(mlflow.pytorch.save_model(..., serialization_format='pt2')); a pickled nn.Module "
        f"has no safe loader. Found no model.pt2 in {os.fspath(data)!r}."
    )


def _inside(folder: Path, flavor: str, value: object, *, directory: bool = False) -> Path:
    """``value``, a path relative to ``folder``, checked to lead to a file (or a directory)
    inside it, links followed."""
    if not isinstance(value, str) or not value:
        raise InputFileError(
            f"model: the MLflow {flavor} flavour must name its model file. Found {shown(value)}."
        )
    path = inside_folder(folder, value, f"model: the MLflow {flavor} flavour's path")
    if not (path.is_dir() if directory else path.is_file()):
        raise InputFileError(
            f"model: the MLflow {flavor} flavour's {'folder' if directory else 'file'} must "
            f"exist. Found {os.fspath(path)!r}."
        )
    return path
