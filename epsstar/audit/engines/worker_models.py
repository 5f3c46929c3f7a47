"""The models a Dask worker process loads: each once, its files checked against the client's.

A task names its model by a :class:`ModelSpec`: how to load it (the :class:`ModelFile`
the client loaded) and the SHA-256 of every file the client's loader read (the model
file, ONNX external data, a Hugging Face folder's files). :func:`checked_model` loads it
once per worker process, keyed by the whole spec, digests included, so that a task for a
changed file never meets a model loaded from the old one; before loading, each file's
SHA-256 on the worker must be the client's.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from epsstar.audit.data.files import FileDigest, digests_of
from epsstar.audit.model.loading import LoadedAuditModel, ModelFile
from epsstar.exceptions import InputFileError
from epsstar.plumbing.files.digests import sha256_of

__all__ = ["MAX_LOADED", "ModelSpec", "checked_model", "model_spec"]

#: Models one worker process keeps loaded (a target and its reference models).
MAX_LOADED = 64


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """How a worker loads a model, and the SHA-256 each of its files must have."""

    file: ModelFile
    digests: tuple[FileDigest, ...]


#: The models this worker process loaded, by everything that defines them.
_LOADED: dict[ModelSpec, LoadedAuditModel] = {}
#: Held while a model is looked up and loaded, so that two threads of a worker load it once.
_LOADING = threading.Lock()


def checked_model(spec: ModelSpec) -> LoadedAuditModel:
    """The model of ``spec``, loaded once per process, its files checked against the client's."""
    with _LOADING:
        return _checked_model(spec)


def _checked_model(spec: ModelSpec) -> LoadedAuditModel:
    if spec in _LOADED:
        return _LOADED[spec]
    for expected in spec.digests:
        try:
            found = sha256_of(Path(expected.path))
        except OSError as error:
            raise InputFileError(
                f"a worker cannot read a model file ({error}). Found {expected.path!r}."
            ) from None
        if found != expected.sha256:
            raise InputFileError(
                f"a worker's copy of a model file differs from the one audited here (sha256 "
                f"{found[:16]}... instead of {expected.sha256[:16]}...). Found {expected.path!r}."
            )
    loaded = spec.file.load()
    if len(_LOADED) >= MAX_LOADED:
        _LOADED.clear()
    _LOADED[spec] = loaded
    return loaded


def model_spec(file: ModelFile, model: object) -> ModelSpec:
    """How a worker loads ``file`` (``model`` as loaded here), with the SHA-256 of the model
    file and of every file the loader read beside it."""
    files = [os.fspath(f) for f in getattr(model, "files", (file.path,))]
    if os.fspath(file.path) not in files and not Path(file.path).is_dir():
        files.insert(0, os.fspath(file.path))
    return ModelSpec(file, digests_of(files))
