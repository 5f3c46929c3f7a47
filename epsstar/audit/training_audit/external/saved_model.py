"""The model a command saved into ``{out}``, found as ``epsstar audit`` finds a model file.

A file is a model when a loader plugin claims its suffix (``epsstar audit`` picks the loader
the same way), or, with ``--loader``, when that loader claims it. The folder must hold exactly
one: none, or two (a model and a ``.txt`` log that the LightGBM loader would claim, say), is
refused in one line naming what was found; ``--loader`` settles the second case. A folder
written by ``epsstar train`` (``model.onnx``, ``model.pt`` and ``training.json``) is read
through the ONNX file its ``training.json`` names; its privacy claim is the one that file
declares (``epsstar.privacy``, the ε and δ of ``training.json``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from epsstar.audit.model.plugins import get_loader, loader_for_path
from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.files.json_parsing import parse_json

__all__ = ["TRAINING_RECORD", "find_saved_model"]

#: The record ``epsstar train`` writes beside its models.
TRAINING_RECORD: Final = "training.json"
#: Files named in an error, at most.
_SHOWN = 5


def _files(out: Path) -> list[Path]:
    """Every file under ``out`` (hidden ones left out), in name order."""
    return sorted(
        path
        for path in out.rglob("*")
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(out).parts)
    )


def _trainer_model(out: Path) -> Path | None:
    """The ONNX model ``epsstar train`` names in ``training.json``, if the folder is one of its."""
    record = out / TRAINING_RECORD
    if not record.is_file():
        return None
    try:
        document = parse_json(record.read_text(encoding="utf-8"), str(record))
    except (OSError, ValueError):  # InputFileError among them
        return None
    files = document.get("files") if isinstance(document, dict) else None
    name = files.get("onnx") if isinstance(files, dict) else None
    if not isinstance(name, str) or Path(name).name != name or not (out / name).is_file():
        return None
    return out / name


def _is_model(path: Path, suffixes: tuple[str, ...] | None) -> bool:
    if suffixes is not None:
        return any(path.name.lower().endswith(suffix.lower()) for suffix in suffixes)
    try:
        loader_for_path(path)
    except InvalidInputError:
        return False
    return True


def _listed(paths: list[Path], out: Path) -> str:
    names = [repr(str(path.relative_to(out))) for path in paths[:_SHOWN]]
    return ", ".join(names) + (f" and {len(paths) - _SHOWN} more" if len(paths) > _SHOWN else "")


def find_saved_model(out: Path, loader: str | None = None, *, run: int = 0) -> Path:
    """The one model file the command wrote into ``out`` (see the module)."""
    trained = _trainer_model(out)
    if trained is not None and loader is None:
        return trained
    suffixes = None if loader is None else get_loader(loader)[0].suffixes
    files = _files(out)
    models = [path for path in files if _is_model(path, suffixes)]
    where = f"--command (run {run + 1})"
    if not models:
        readable = "" if loader is None else f" the {loader} loader reads"
        found = _listed(files, out) if files else "an empty folder"
        raise InvalidInputError(
            f"{where} wrote no model{readable} into {{out}}; it must save one model there in a "
            f"format epsstar audit reads. Found {found}."
        )
    if len(models) > 1:
        raise InvalidInputError(
            f"{where} wrote {len(models)} models into {{out}}; it must save one (or name the "
            f"loader with --loader). Found {_listed(models, out)}."
        )
    return models[0]
