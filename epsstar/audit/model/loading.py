"""Loading a model through its loader plugin, with the class labels of its outputs.

:meth:`ModelFile.load` resolves the plugin (:mod:`.plugins`: by name, else by the file's
suffix, or for a URL by its scheme), loads the file (of a model folder, the model file
the folder names: :mod:`.folders`; of a served model, the server's description of it) and
settles the class labels of the output columns: those given,
else those the model file states, else the column order. :meth:`ModelObject.load` does the
same for a fitted model in memory, through the loader that claims it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from epsstar.audit.inputs.served import DEFAULT_SERVING, Serving, is_url, shown_url
from epsstar.audit.model.folders import DESCRIPTOR, ModelFolder, model_folder
from epsstar.audit.model.plugins import (
    LoadedModel,
    LoaderInfo,
    ObjectIdentity,
    OutputKind,
    type_name,
)
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.plumbing.runtime.device import CPU, checked_device

__all__ = ["ClassesFrom", "LoadedAuditModel", "ModelFile", "ModelObject"]

ClassesFrom = Literal["model", "argument", "column order"]


@dataclass(frozen=True, slots=True)
class LoadedAuditModel:
    """A loaded model, the plugin that loaded it, and the class labels of its outputs.

    ``classes`` are in output-column order (``None``: 0..K−1, the column order);
    ``classes_from`` says where they come from: ``"argument"``, ``"model"`` or
    ``"column order"``. ``file`` is the model file read (of a model folder, the one the
    folder names; ``folder`` then says which folder and flavour).
    """

    model: LoadedModel
    loader: LoaderInfo
    classes: tuple[object, ...] | None
    classes_from: ClassesFrom
    file: Path | None = None
    folder: ModelFolder | None = None
    #: The torch device the model runs on, for a loader that takes one (else ``None``).
    device: str | None = None
    #: What an in-memory model is (``None``: the model was read from ``file``).
    identity: ObjectIdentity | None = None

    def files(self, given: Path) -> list[str]:
        """Every file the model was read from, the model file first (``given``: the path
        the model was given as), then its sidecars and a folder's descriptor; none for a
        served model or a model in memory."""
        if self.identity is not None or getattr(self.model, "served", None) is not None:
            return []
        model = os.fspath(self.file or given)
        files = [os.fspath(f) for f in getattr(self.model, "files", (model,))]
        if model not in files:
            files.insert(0, model)
        if self.folder is not None:
            files.append(os.fspath(self.folder.descriptor))
        return files


@dataclass(frozen=True, slots=True)
class ModelFile:
    """A model file and how to load it.

    ``loader`` names an ``epsstar.loaders`` plugin (``None``: chosen by the file's
    suffix); ``outputs`` overrides its logits/probabilities detection; ``trust`` allows
    formats that can execute code when loaded; ``classes`` are the class labels of the
    model's outputs, in column order (``None``: those the model file states, else 0..K−1).
    ``device`` is the torch device a torch-based loader runs the model on (``--device``:
    checked by :func:`~epsstar.plumbing.runtime.device.checked_device`); a loader that runs on
    the CPU only refuses any other.
    """

    path: Path
    loader: str | None = None
    outputs: OutputKind | None = None
    trust: bool = False
    classes: Sequence[object] | None = None
    #: The base model folder an adapter folder (LoRA) applies to (``--base-model``).
    base_model: Path | None = None
    device: str = CPU
    #: The URL of a served model (``path`` then stands for it in messages: its last part).
    url: str | None = None
    #: How a served model is reached (timeouts, retries, rate, output).
    serving: Serving = DEFAULT_SERVING

    @classmethod
    def of(cls, model: str | os.PathLike[str], **settings: Any) -> ModelFile:
        """The model at ``model``, a path or the URL of a served model (a URL is kept as it
        is: ``Path`` would fold its ``//``), read with ``settings`` (the other fields)."""
        if isinstance(model, str) and is_url(model):
            return cls(Path(), url=model, **settings)
        return cls(Path(model), **settings)

    def __post_init__(self) -> None:
        if self.url is None and is_url(self.path):
            object.__setattr__(self, "url", str(self.path))
        if self.url is not None:
            parts = [part for part in shown_url(self.url).split("/") if part]
            object.__setattr__(self, "path", Path(parts[-1] if len(parts) > 1 else "model"))
        object.__setattr__(self, "path", Path(self.path))
        object.__setattr__(self, "device", checked_device(self.device))
        if self.base_model is not None:
            object.__setattr__(self, "base_model", Path(self.base_model))
        object.__setattr__(self, "classes", _checked_classes(self.classes))

    @property
    def shown(self) -> str:
        """The model as messages quote it: the path, or the URL without credentials."""
        return repr(str(self.path) if self.url is None else shown_url(self.url))

    @property
    def outputs_requested(self) -> bool:
        """Whether the user chose how the model's outputs are read."""
        return self.outputs is not None

    def located(self) -> ModelFolder | None:
        """Check that the model exists: a file, an MLflow model folder (returned; its
        ``MLmodel`` file stands for it), or another folder, which a loader of folders must
        read (a Hugging Face model's); a served model is checked when it is loaded."""
        if self.url is not None:
            return None
        if self.path.is_dir():
            return model_folder(self.path) if (self.path / DESCRIPTOR).is_file() else None
        if not self.path.is_file():
            raise InputFileError(f"model: no such file. Found {str(self.path)!r}.")
        if self.path.name == DESCRIPTOR and self.loader is None:
            return model_folder(self.path.parent)
        return None

    def load(self) -> LoadedAuditModel:
        """Load the file with its loader; the class labels are ``classes`` when given, else
        those the model file states. A model folder is loaded from the file it names, by
        the loader of its flavour unless ``loader`` is given."""
        from epsstar.audit.model.plugins import get_loader, loader_for_path

        if self.url is not None:
            return self._load_served(self.url)
        folder = self.located()
        path = self.path if folder is None else folder.file
        name = self.loader or (folder.loader if folder is not None else None)
        plugin, info = get_loader(name) if name else loader_for_path(path)
        extended: dict[str, Path | str] = {}
        if self.base_model is not None:
            if not getattr(plugin, "takes_base_model", False):
                raise InvalidInputError(
                    f"a base model (--base-model) is read only by loaders of adapter folders. "
                    f"Found the {info.name} loader."
                )
            extended["base_model"] = self.base_model
        if self.device != CPU:
            if not getattr(plugin, "takes_device", False):
                raise InvalidInputError(
                    f"--device {self.device}: the {info.name} loader runs models on the CPU "
                    f"only (the torch-based loaders take a device). Found {self.device!r}."
                )
            extended["device"] = self.device
        if extended:
            load = getattr(plugin, "load")  # noqa: B009 - the extended signature
            model = load(path, outputs=self.outputs, trust=self.trust, **extended)
        else:
            model = plugin.load(path, outputs=self.outputs, trust=self.trust)
        classes, source = _settled_classes(self.classes, model)
        device = self.device if getattr(plugin, "takes_device", False) else None
        return LoadedAuditModel(model, info, classes, source, path, folder, device)

    def _load_served(self, url: str) -> LoadedAuditModel:
        """A served model, by the loader that claims the URL's scheme (or the one named)."""
        from epsstar.audit.model.plugins import get_loader, loader_for_url

        plugin, info = get_loader(self.loader) if self.loader else loader_for_url(url)
        load_url = getattr(plugin, "load_url", None)
        if not callable(load_url):
            raise InvalidInputError(
                f"the {info.name} loader reads files, not served models; name a loader of "
                f"URLs or none. Found the URL {self.shown}."
            )
        if self.base_model is not None or self.device != CPU or self.trust:
            raise InvalidInputError(
                f"a served model runs on its server: --base-model, --device and --trust-model "
                f"do not apply. Found the URL {self.shown}."
            )
        model = load_url(url, outputs=self.outputs, serving=self.serving)
        classes, source = _settled_classes(self.classes, model)
        return LoadedAuditModel(model, info, classes, source)


def _settled_classes(
    given: Sequence[object] | None, model: LoadedModel
) -> tuple[tuple[object, ...] | None, ClassesFrom]:
    """The class labels of the outputs and where they come from: ``given``, else the
    model's, else the column order."""
    if given is not None:
        return tuple(given), "argument"
    if model.classes is not None:
        return tuple(model.classes), "model"
    return None, "column order"


def _checked_classes(classes: Sequence[object] | None) -> tuple[object, ...] | None:
    """``classes`` as a tuple, refused when a string or empty."""
    if classes is None:
        return None
    if isinstance(classes, (str, bytes)) or not len(classes):
        raise InvalidInputError(
            f"classes must be a non-empty sequence of class labels. Found {classes!r}."
        )
    return tuple(classes)


@dataclass(frozen=True, slots=True)
class ModelObject:
    """A fitted model in memory (an estimator, an ``nn.Module``, a booster) and how to load
    it: the counterpart of :class:`ModelFile` for a notebook's objects.

    ``loader`` names the plugin (``None``: the one whose ``claims_object`` takes it);
    ``outputs`` and ``classes`` are as for :class:`ModelFile`; ``trust`` is passed on to
    the reference models' files an attack reads. The model runs on the CPU.
    """

    model: object
    loader: str | None = None
    outputs: OutputKind | None = None
    classes: Sequence[object] | None = None
    trust: bool = False

    #: Objects run where they are, on the CPU.
    device = CPU
    base_model = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "classes", _checked_classes(self.classes))

    @property
    def path(self) -> Path:
        """How messages name the model: its type (an object has no path; no file is read)."""
        return Path(type_name(self.model))

    @property
    def outputs_requested(self) -> bool:
        """Whether the user chose how the model's outputs are read."""
        return self.outputs is not None

    def located(self) -> None:
        """An object is where it is: nothing to find."""
        return

    def load(self) -> LoadedAuditModel:
        """The object loaded by the loader that claims it (or the one named)."""
        from epsstar.audit.model.plugins import get_loader, loader_for_object

        if self.loader is None:
            plugin, info = loader_for_object(self.model)
        else:
            plugin, info = get_loader(self.loader)
            claims = getattr(plugin, "claims_object", None)
            if not (callable(claims) and claims(self.model)):
                raise InvalidInputError(
                    f"the {info.name} loader must take the model object. Found a "
                    f"{type_name(self.model)}."
                )
        model = getattr(plugin, "load_object")(self.model, outputs=self.outputs)  # noqa: B009
        identity = getattr(model, "identity", None)
        if not isinstance(identity, ObjectIdentity):
            raise InvalidInputError(
                f"loader plugin {info.name!r} must give the models it loads from objects an "
                f"identity (ObjectIdentity). Found {identity!r}."
            )
        classes, source = _settled_classes(self.classes, model)
        return LoadedAuditModel(model, info, classes, source, identity=identity)
