"""The files of a Hugging Face model folder, checked before anything is loaded.

A causal LM saved with ``save_pretrained`` holds ``config.json``, its weights as
``model.safetensors`` (or shards listed in ``model.safetensors.index.json``) and its
tokenizer's files; an adapter saved by PEFT holds ``adapter_config.json`` and
``adapter_model.safetensors``. Weights only in pickle files (``pytorch_model.bin``,
``adapter_model.bin``) can run code when read, so they are refused unless the user trusts the
model (``--trust-model``), like the other pickle formats; a configuration that needs the
model's own code (``auto_map``) is always refused, since ``trust_remote_code`` is never set.
A folder written by ``epsstar train --text-column`` also holds ``epsstar.privacy``, the DP
guarantee it declares (:func:`declared_privacy`). The JSON files are read within the bound of
every structured input file, and each shard a weights index names must stay inside the folder
(:mod:`epsstar.audit.inputs`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from epsstar.audit.inputs.inside import inside_folder
from epsstar.audit.model.declared_privacy import PRIVACY_KEY, DeclaredPrivacy, privacy_from_text
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.plumbing.files.json_parsing import read_json_file
from epsstar.plumbing.records.json_types import JsonObject

__all__ = [
    "ADAPTER_CONFIG",
    "CONFIG",
    "TOKENIZER_FILES",
    "AdapterFiles",
    "ModelFiles",
    "adapter_files",
    "declared_privacy",
    "model_files",
    "read_json",
    "tokenizer_files",
]

CONFIG: Final = "config.json"
ADAPTER_CONFIG: Final = "adapter_config.json"
#: The files a tokenizer may be saved as (any of them is enough to try loading it).
TOKENIZER_FILES: Final = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.json",
    "merges.txt",
    "tokenizer.model",
    "special_tokens_map.json",
)
#: The small JSON files transformers reads beside the model and tokenizer, checked within
#: the structured-file bound before it reads them (``tokenizer.json`` and ``vocab.json``
#: are vocabularies, read by the tokenizers library).
_SETTINGS_FILES: Final = (
    "tokenizer_config.json",
    "special_tokens_map.json",
    "generation_config.json",
)
_SAFE_INDEX: Final = "model.safetensors.index.json"
_PICKLE_INDEX: Final = "pytorch_model.bin.index.json"
WeightsKind = Literal["safetensors", "pickle"]


@dataclass(frozen=True, slots=True)
class ModelFiles:
    """A model folder's configuration, weights (and their kind) and tokenizer files."""

    folder: Path
    config: Path
    weights: tuple[Path, ...]
    kind: WeightsKind
    tokenizer: tuple[Path, ...]

    @property
    def all(self) -> tuple[Path, ...]:
        return (self.config, *self.weights, *self.tokenizer)


@dataclass(frozen=True, slots=True)
class AdapterFiles:
    """An adapter folder's configuration (parsed), weights and any tokenizer files."""

    folder: Path
    config_path: Path
    config: JsonObject
    weights: Path
    kind: WeightsKind
    tokenizer: tuple[Path, ...]

    @property
    def all(self) -> tuple[Path, ...]:
        return (self.config_path, self.weights, *self.tokenizer)


def read_json(path: Path) -> JsonObject:
    """A JSON object from ``path`` within the bound of every structured input file
    (:mod:`epsstar.plumbing.files.input_bounds`), or a one-line refusal naming the file."""
    value = read_json_file(path, str(path))
    if not isinstance(value, dict):
        raise InputFileError(f"{path}: must hold a JSON object. Found {type(value).__name__}.")
    return value


def _listing(folder: Path) -> str:
    names = sorted(p.name for p in folder.iterdir())
    shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
    return shown or "nothing"


def _shards(folder: Path, index: str) -> tuple[Path, ...]:
    mapping = read_json(folder / index).get("weight_map")
    if not isinstance(mapping, dict) or not mapping:
        raise InputFileError(f"{folder / index}: must map the weights to their files.")
    shards = tuple(
        inside_folder(folder, str(name), f"{folder / index}: each weight file's path")
        for name in dict.fromkeys(mapping.values())
    )
    missing = [p.name for p in shards if not p.is_file()]
    if missing:
        raise InputFileError(
            f"{folder}: every weight file its index lists must be there. Found none named "
            f"{missing[0]!r}."
        )
    return shards


def _weights(folder: Path, trust: bool) -> tuple[tuple[Path, ...], WeightsKind]:
    """The folder's safetensors weights, else (trusted only) its pickle weights."""
    if (folder / _SAFE_INDEX).is_file():
        return (folder / _SAFE_INDEX, *_shards(folder, _SAFE_INDEX)), "safetensors"
    safe = sorted(folder.glob("*.safetensors"))
    if safe:
        return tuple(safe), "safetensors"
    pickled = sorted(folder.glob("*.bin"))
    if (folder / _PICKLE_INDEX).is_file():
        pickled = [folder / _PICKLE_INDEX, *_shards(folder, _PICKLE_INDEX)]
    if not pickled:
        raise InputFileError(
            f"{folder}: a model folder must hold its weights (model.safetensors, saved by "
            f"save_pretrained). Found {_listing(folder)}."
        )
    if not trust:
        raise InvalidInputError(
            f"{folder}: the weights are only in pickle files, which can run code when read; "
            f"save them as safetensors (save_pretrained(..., safe_serialization=True)) or pass "
            f"--trust-model if you trust this folder. Found {pickled[0].name}."
        )
    return tuple(pickled), "pickle"


def tokenizer_files(folder: Path) -> tuple[Path, ...]:
    """The tokenizer files in ``folder`` (possibly none); its small JSON settings files
    (:data:`_SETTINGS_FILES`) are first read within the structured-file bound."""
    for name in _SETTINGS_FILES:
        if (folder / name).is_file():
            read_json(folder / name)
    return tuple(folder / name for name in TOKENIZER_FILES if (folder / name).is_file())


def _refuse_remote_code(config: JsonObject, path: Path) -> None:
    if "auto_map" in config:
        raise InvalidInputError(
            f"{path}: the model needs its own Python code (auto_map), which epsstar never "
            f"runs (trust_remote_code is never set). Found auto_map {config['auto_map']!r}."
        )


def model_files(folder: Path, *, trust: bool) -> ModelFiles:
    """A model folder's files, checked (see the module docstring)."""
    config = folder / CONFIG
    if not config.is_file():
        raise InputFileError(
            f"{folder}: a Hugging Face model folder must hold config.json (saved by "
            f"save_pretrained). Found {_listing(folder)}."
        )
    _refuse_remote_code(read_json(config), config)
    weights, kind = _weights(folder, trust)
    return ModelFiles(folder, config, weights, kind, tokenizer_files(folder))


def adapter_files(folder: Path, *, trust: bool) -> AdapterFiles:
    """An adapter folder's files and parsed configuration, checked."""
    path = folder / ADAPTER_CONFIG
    config = read_json(path)
    _refuse_remote_code(config, path)
    safe = folder / "adapter_model.safetensors"
    if safe.is_file():
        return AdapterFiles(folder, path, config, safe, "safetensors", tokenizer_files(folder))
    pickled = folder / "adapter_model.bin"
    if not pickled.is_file():
        raise InputFileError(
            f"{folder}: an adapter folder must hold adapter_model.safetensors. Found "
            f"{_listing(folder)}."
        )
    if not trust:
        raise InvalidInputError(
            f"{folder}: the adapter's weights are only in a pickle file, which can run code "
            f"when read; save it as safetensors or pass --trust-model if you trust this "
            f"folder. Found adapter_model.bin."
        )
    return AdapterFiles(folder, path, config, pickled, "pickle", tokenizer_files(folder))


def declared_privacy(folder: Path) -> tuple[DeclaredPrivacy | None, tuple[Path, ...]]:
    """The DP guarantee the file ``epsstar.privacy`` of ``folder`` declares (the JSON text of
    :func:`~epsstar.audit.model.declared_privacy.privacy_to_text`, read within the bound of
    every structured input file), and the file read; ``(None, ())`` without one."""
    path = folder / PRIVACY_KEY
    if not path.is_file():
        return None, ()
    value = read_json(path)
    return privacy_from_text(json.dumps(value), path), (path,)
