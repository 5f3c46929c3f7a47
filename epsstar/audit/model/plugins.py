"""Model-loader plugins: discovery, lookup and the protocol a loader meets.

A *loader* turns a saved model file into a :class:`LoadedModel`, an object that
returns per-record predictions; losses are computed from those predictions in core
(:mod:`epsstar.statistics.losses`), the same way for every loader.

Loaders are found through one path only: the entry-point group ``epsstar.loaders``.
The built-in ones (``onnx``, ``torchscript``, ``sklearn``) are declared in epsstar's
own ``pyproject.toml`` exactly like a third-party plugin::

    [project.entry-points."epsstar.loaders"]
    myformat = "my_package.loader:MyLoader"

The group is read once, on first use, and each entry point is imported only when its
loader is asked for. The distribution and version that supplied each entry point are
kept in :class:`LoaderInfo`, so results can say which plugin produced them. An entry
point may name a class (instantiated with no arguments) or a ready loader object.

This module imports nothing heavy: numpy, onnxruntime, torch and skops are imported
by the loaders themselves, when a file is loaded.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING, Any, Final, Protocol, cast, runtime_checkable

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.files.digests import sha256_of_bytes
from epsstar.plumbing.records.json_records import JsonRecord
from epsstar.statistics.names import OutputKind

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from epsstar.audit.model.features import Features

__all__ = [
    "ENTRY_POINT_GROUP",
    "INSTALL_HINTS",
    "LoadedModel",
    "LoaderInfo",
    "ModelLoader",
    "ObjectIdentity",
    "OutputKind",
    "available_loaders",
    "get_loader",
    "import_optional",
    "loader_for_object",
    "loader_for_path",
    "loader_for_url",
    "register_loader",
]

ENTRY_POINT_GROUP: Final = "epsstar.loaders"

INSTALL_HINTS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "onnxruntime": 'pip install "epsstar[onnx]"',
        "onnx": 'pip install "epsstar[onnx]"',
        "torch": 'pip install "epsstar[torch]"',
        "skops": 'pip install "epsstar[sklearn]"',
        "lightgbm": 'pip install "epsstar[lightgbm]"',
        "xgboost": 'pip install "epsstar[xgboost]"',
        "catboost": 'pip install "epsstar[catboost]"',
        "keras": 'pip install "epsstar[keras,torch]"',
        "transformers": 'pip install "epsstar[text]"',
        "tokenizers": 'pip install "epsstar[text]"',
        "safetensors": 'pip install "epsstar[text]"',
        "yaml": 'pip install "epsstar[mlflow]"',
        "requests": 'pip install "epsstar[serve]"',
    }
)
"""How to install the optional package a built-in loader needs, by import name."""


@runtime_checkable
class LoadedModel(Protocol):
    """A model ready to predict, as returned by :meth:`ModelLoader.load`.

    Besides the members below, the audit reads eight optional attributes when a model has
    them (:class:`epsstar.loaders.BatchedModel` has the first seven):

    * ``accepts_features`` — true when :meth:`predict` takes
      :class:`~epsstar.audit.model.features.Features` (typed, named columns: text for a pipeline
      that encodes categories, one tensor column for an image model); otherwise it is given
      a numeric array, ``(n, d)`` or ``(n, *shape)``;

    * ``feature_names`` — the names of the columns the model takes, in order, when the file
      records them (``feature_names_in_``, per-column ONNX inputs, an exporter's metadata);
      the audit then hands the data's columns over by these names, not by position;
    * ``takes_text`` — true when the model takes text columns; otherwise text in the data
      is refused before the model sees it;
    * ``accepts_missing`` — true when the model handles missing values itself (gradient
      boosted trees, estimators with scikit-learn's ``allow_nan`` tag); missing feature
      values then reach it as NaN, otherwise they are refused before the model sees them;
    * ``files`` — every file the model is read from (the model file first, then e.g. ONNX
      external data), each hashed into the result's provenance;
    * ``input_dtype`` — the numeric type the features are cast to; every value is checked
      to fit it;
    * ``declared_privacy`` — the DP guarantee the file says the model was trained under
      (:class:`~epsstar.audit.model.declared_privacy.DeclaredPrivacy`), shown beside Epsilon*.
    * ``input_notes`` — lines the audit warns with after streaming the records, about how
      the model read them (the records holding a category it was not trained on).
    """

    @property
    def n_features(self) -> int | None:
        """Input width the model expects, if the file says; else ``None``."""
        ...

    @property
    def classes(self) -> tuple[object, ...] | None:
        """Class labels in output-column order, if known; ``None`` means ``0 … K−1``.

        For a binary model returning one value per record, ``classes[1]`` is the class
        whose probability (or log-odds) is returned.
        """
        ...

    @property
    def output_kind(self) -> OutputKind:
        """``"probabilities"`` or ``"logits"``: what :meth:`predict` returns."""
        ...

    def predict(self, features: Features | np.ndarray) -> np.ndarray:
        """Predictions for ``n`` records: :class:`~epsstar.audit.model.features.Features` (typed,
        named columns, as the audit passes them) or an ``(n, d)`` array.

        Returns float64: shape ``(n,)`` (``P(y = classes[1])`` or its log-odds) for a
        binary model, ``(n, K)`` class probabilities or logits for ``K`` classes. A wrong
        width raises :class:`~epsstar.exceptions.InvalidInputError` naming the expected
        and the found width; the features are cast to the dtype the model takes.
        """
        ...


@runtime_checkable
class ModelLoader(Protocol):
    """What an ``epsstar.loaders`` entry point supplies.

    A loader of model folders (a Hugging Face model's) also has ``reads_folder(path) ->
    bool``, which says whether it reads the folder ``path``; its ``suffixes`` may then be
    empty. A loader that applies adapters to a base model takes ``base_model=`` in
    :meth:`load` and says so with ``takes_base_model = True``; one that runs the model on
    a torch device takes ``device=`` (``"cuda:0"``, ...) and says so with
    ``takes_device = True``. A loader of served models has ``schemes``, the URL schemes it
    claims (``("http", "https")``), and ``load_url(url, *, outputs=None, serving=...)``
    (``serving``: a :class:`~epsstar.audit.inputs.served.Serving`); its ``suffixes`` may
    then be empty.

    A loader that also takes fitted models in memory (a notebook's estimator, ``nn.Module``
    or booster) has two more members, as it has ``suffixes`` for files:
    ``claims_object(obj) -> bool``, true for the objects it loads (it must not import a
    library to answer: an object of a library not yet imported is none of its), and
    ``load_object(obj, *, outputs=None) -> LoadedModel``, which returns the same model its
    :meth:`load` returns for the object saved to a file, with an ``identity``
    (:class:`ObjectIdentity`): an object is not a file, so the result says its type and a
    digest of a deterministic serialisation instead of a path.
    """

    name: str
    suffixes: tuple[str, ...]

    def load(
        self, path: Path, *, outputs: OutputKind | None = None, trust: bool = False
    ) -> LoadedModel:
        """Read ``path``.

        ``outputs`` overrides the detection of logits vs probabilities (``None``:
        detect). ``trust=True`` accepts formats or types that run code when loaded
        (pickle, joblib, skops types outside its trusted list); without it such files
        are refused with :class:`~epsstar.exceptions.InvalidInputError`. Unreadable or
        corrupt files raise :class:`~epsstar.exceptions.InputFileError`.
        """
        ...


@dataclass(frozen=True, slots=True)
class ObjectIdentity:
    """What an in-memory model is: its type, and the SHA-256 of ``hashed`` (how the loader
    serialised it, deterministically), or ``None`` when it could not be serialised."""

    type: str
    sha256: str | None
    hashed: str

    @classmethod
    def of(cls, obj: object, hashed: str, serialise: Callable[[], bytes]) -> ObjectIdentity:
        """The identity of ``obj``, whose bytes ``serialise()`` returns (``hashed`` says what
        they are); a serialisation that fails leaves the object not hashed."""
        try:
            digest: str | None = sha256_of_bytes(serialise())
        except Exception:
            digest = None
        return cls(type_name(obj), digest, hashed)

    @property
    def described(self) -> str:
        """How the result names the model: ``in memory: TYPE (SHA-256 of ...)``."""
        how = f"SHA-256 of {self.hashed}" if self.sha256 is not None else "not hashed"
        return f"in memory: {self.type} ({how})"


def type_name(obj: object) -> str:
    """The qualified name of ``obj``'s type, e.g. ``sklearn.pipeline.Pipeline``."""
    kind = type(obj)
    return f"{kind.__module__}.{kind.__qualname__}"


@dataclass(frozen=True, slots=True)
class LoaderInfo(JsonRecord):
    """Where a loader comes from: its entry point and the distribution that declared it.

    ``distribution`` and ``version`` are ``None`` for loaders registered with
    :func:`register_loader` rather than through an entry point.
    """

    name: str
    value: str
    distribution: str | None
    version: str | None

    def __str__(self) -> str:
        if self.distribution is None:
            return f"{self.name} ({self.value})"
        return f"{self.name} ({self.distribution} {self.version})"


@dataclass(slots=True)
class _Entry:
    info: LoaderInfo
    entry_point: EntryPoint | None = None
    loader: ModelLoader | None = None
    duplicates: tuple[LoaderInfo, ...] = ()


_lock = threading.RLock()
_entries: dict[str, _Entry] = {}
_infos: dict[str, LoaderInfo] = {}
_view: Mapping[str, LoaderInfo] = MappingProxyType(_infos)
_discovered = False


def _info_of(entry_point: EntryPoint) -> LoaderInfo:
    dist = entry_point.dist
    return LoaderInfo(
        name=entry_point.name,
        value=entry_point.value,
        distribution=None if dist is None else dist.name,
        version=None if dist is None else dist.version,
    )


def _discover() -> None:
    """Read the entry-point group once; later calls do nothing."""
    global _discovered
    with _lock:
        if _discovered:
            return
        for entry_point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            info = _info_of(entry_point)
            known = _entries.get(entry_point.name)
            if known is None:
                _entries[entry_point.name] = _Entry(info, entry_point)
                _infos[entry_point.name] = info
            elif known.entry_point is not None and info != known.info:
                known.duplicates += (info,)
        _discovered = True


def _reset() -> None:
    """Forget every loader so the entry points are read again (for tests)."""
    global _discovered
    with _lock:
        _entries.clear()
        _infos.clear()
        _discovered = False


def available_loaders() -> Mapping[str, LoaderInfo]:
    """Read-only view of the known loaders, by name (entry points plus registered ones).

    Discovery happens on the first call; no plugin is imported.
    """
    _discover()
    return _view


def _names() -> str:
    return ", ".join(sorted(_infos)) or "(none installed)"


def _install_hint(error: ImportError) -> str:
    missing = (error.name or "").split(".")[0]
    hint = INSTALL_HINTS.get(missing)
    return f" Install it with: {hint}." if hint else ""


def import_optional(module: str, *, loader: str) -> ModuleType:
    """Import ``module`` for ``loader``, or raise an InvalidInputError with the install hint."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        hint = INSTALL_HINTS.get(module.split(".")[0])
        how = f" Install it with: {hint}." if hint else ""
        raise InvalidInputError(
            f"the {loader} loader needs the {module} package.{how} Found {type(error).__name__}: "
            f"{error}."
        ) from error


def _check_protocol(name: str, value: str, loader: Any) -> ModelLoader:
    """Return ``loader`` if it meets :class:`ModelLoader`, else say what is wrong."""
    problems: list[str] = []
    own_name = getattr(loader, "name", None)
    if not isinstance(own_name, str) or not own_name:
        problems.append(f"a non-empty str attribute 'name' (found {own_name!r})")
    elif own_name != name:
        problems.append(f"the name it is registered under, {name!r} (found name {own_name!r})")
    suffixes = getattr(loader, "suffixes", None)
    folders = callable(getattr(loader, "reads_folder", None))
    schemes = getattr(loader, "schemes", ())
    if not (isinstance(schemes, tuple) and all(isinstance(s, str) and s for s in schemes)):
        problems.append(f"an optional tuple 'schemes' of URL schemes (found {schemes!r})")
    elif schemes and not callable(getattr(loader, "load_url", None)):
        problems.append("a callable 'load_url(url, *, outputs=None, serving=...)' (it has schemes)")
    if not (
        isinstance(suffixes, tuple)
        and (suffixes or folders or schemes)
        and all(isinstance(s, str) and s.startswith(".") and len(s) > 1 for s in suffixes)
    ):
        problems.append(
            f"a non-empty tuple 'suffixes' of file suffixes such as '.onnx' (found {suffixes!r})"
        )
    if not callable(getattr(loader, "load", None)):
        problems.append("a callable 'load(path, *, outputs=None, trust=False)'")
    if problems:
        raise InvalidInputError(
            f"loader plugin {name!r} ({value}) must have " + "; ".join(problems) + "."
        )
    return cast(ModelLoader, loader)


def _instantiate(name: str, entry: _Entry) -> ModelLoader:
    """Import the entry point (once) and check the loader it names."""
    if entry.loader is not None:
        return entry.loader
    if entry.duplicates:
        sources = ", ".join(str(info) for info in (entry.info, *entry.duplicates))
        raise InvalidInputError(
            f"loader {name!r} must be supplied by one installed distribution; uninstall all "
            f"but one. Found {sources}."
        )
    assert entry.entry_point is not None
    value = entry.info.value
    try:
        target = entry.entry_point.load()
    except ImportError as error:
        hint = _install_hint(error)
        if not hint and entry.info.distribution:
            hint = f" Reinstall it with: pip install {entry.info.distribution}."
        raise InvalidInputError(
            f"loader plugin {name!r} ({value}) could not be imported.{hint} "
            f"Found {type(error).__name__}: {error}."
        ) from error
    except Exception as error:
        raise InvalidInputError(
            f"loader plugin {name!r} ({value}) could not be imported. "
            f"Found {type(error).__name__}: {error}."
        ) from error
    if isinstance(target, type):
        try:
            target = target()
        except Exception as error:
            raise InvalidInputError(
                f"loader plugin {name!r} ({value}) must be a class that takes no arguments "
                f"or a loader object. Found {type(error).__name__}: {error}."
            ) from error
    entry.loader = _check_protocol(name, value, target)
    return entry.loader


def get_loader(name: str) -> tuple[ModelLoader, LoaderInfo]:
    """The loader called ``name`` and where it comes from; imports the plugin on first use."""
    _discover()
    with _lock:
        entry = _entries.get(name)
        if entry is None:
            raise InvalidInputError(
                f"loader must be one of the installed loaders: {_names()}. Found {name!r}."
            )
        return _instantiate(name, entry), entry.info


def _matches(path: Path, suffixes: tuple[str, ...]) -> int:
    """Length of the longest of ``suffixes`` that ends the file name (0 if none)."""
    file_name = path.name.lower()
    return max((len(s) for s in suffixes if file_name.endswith(s.lower())), default=0)


@dataclass(frozen=True, slots=True)
class _Claims:
    """What every installed loader answered: those that ``claimed`` the thing, those able to
    claim such things at all (``able``, as a message lists them) and those that failed to
    import (``broken``)."""

    claimed: tuple[tuple[ModelLoader, LoaderInfo], ...]
    able: tuple[str, ...]
    broken: tuple[str, ...]

    def the_one(self, what: str, found: str, none: str) -> tuple[ModelLoader, LoaderInfo]:
        """The single claim; else a one-line error: ``what`` claimed by several loaders, or
        ``none`` (a message that ends with ``found``) when no loader claimed it."""
        if len(self.claimed) == 1:
            return self.claimed[0]
        if self.claimed:
            names = ", ".join(info.name for _, info in self.claimed)
            raise InvalidInputError(
                f"{what} must be claimed by exactly one loader; name the loader to use. "
                f"Found {found}, claimed by {names}."
            )
        raise InvalidInputError(none)


def _claims(
    able: Callable[[str, ModelLoader], str | None], claims: Callable[[ModelLoader], bool]
) -> _Claims:
    """Ask every installed loader (imported to ask it; hold ``_lock``): ``able`` names a
    loader that can claim such things (``None``: it cannot, and is not asked), ``claims``
    says whether it claims this one."""
    claimed: list[tuple[ModelLoader, LoaderInfo]] = []
    listed: list[str] = []
    broken: list[str] = []
    for name in sorted(_entries):
        try:
            loader = _instantiate(name, _entries[name])
        except InvalidInputError:
            broken.append(name)
            continue
        label = able(name, loader)
        if label is None:
            continue
        listed.append(label)
        if claims(loader):
            claimed.append((loader, _entries[name].info))
    return _Claims(tuple(claimed), tuple(listed), tuple(broken))


def _folder_loader(path: Path) -> tuple[ModelLoader, LoaderInfo]:
    """The one loader that reads the model folder ``path`` (``reads_folder(path)`` true)."""
    found = _claims(
        lambda name, loader: name if callable(getattr(loader, "reads_folder", None)) else None,
        lambda loader: bool(getattr(loader, "reads_folder")(path)),  # noqa: B009
    )
    return found.the_one(
        "the model folder",
        repr(str(path)),
        f"the model folder must be one that a loader reads (loaders of folders: "
        f"{', '.join(found.able) or 'none installed'}; a Hugging Face model folder holds a "
        f"config.json, an MLflow model folder an MLmodel file). Found {str(path)!r}.",
    )


def loader_for_path(path: Path) -> tuple[ModelLoader, LoaderInfo]:
    """The one loader whose suffixes match ``path`` (the longest matching suffix wins), or
    for a folder the one loader that reads it (an optional ``reads_folder(path)`` method).

    Every plugin is imported to read its suffixes; plugins that fail to import are left
    out and named in the error if no loader matches.
    """
    path = Path(path)
    _discover()
    if path.is_dir():
        with _lock:
            return _folder_loader(path)
    with _lock:
        claims: list[str] = []
        broken: list[str] = []
        best: list[tuple[ModelLoader, LoaderInfo]] = []
        best_length = 0
        for name in sorted(_entries):
            entry = _entries[name]
            try:
                loader = _instantiate(name, entry)
            except InvalidInputError:
                broken.append(name)
                continue
            claims.append(f"{name} ({', '.join(loader.suffixes)})")
            length = _matches(path, loader.suffixes)
            if length > best_length:
                best, best_length = [(loader, entry.info)], length
            elif length and length == best_length:
                best.append((loader, entry.info))
        if len(best) == 1:
            return best[0]
        listing = "; ".join(claims) or "(none installed)"
        if broken:
            listing += f"; not importable: {', '.join(broken)}"
        if best:
            names = ", ".join(info.name for _, info in best)
            raise InvalidInputError(
                f"the model file's suffix must match exactly one loader; name the loader "
                f"to use. Found {path.name!r}, claimed by {names}. Loaders: {listing}."
            )
        raise InvalidInputError(
            f"the model file's suffix must match a loader ({listing}); name the loader to "
            f"use otherwise. Found {path.name!r}."
        )


def loader_for_object(obj: object) -> tuple[ModelLoader, LoaderInfo]:
    """The one loader whose ``claims_object(obj)`` is true (see :class:`ModelLoader`).

    Every plugin is imported to ask it; an object no loader claims, or more than one, is
    refused naming its type and the loaders that take objects.
    """
    _discover()

    def takes_objects(name: str, loader: ModelLoader) -> str | None:
        claims = getattr(loader, "claims_object", None)
        takes = callable(claims) and callable(getattr(loader, "load_object", None))
        return name if takes else None

    def claims(loader: ModelLoader) -> bool:
        return bool(getattr(loader, "claims_object")(obj))  # noqa: B009

    with _lock:
        found = _claims(takes_objects, claims)
    return found.the_one(
        "the model object",
        f"a {type_name(obj)}",
        f"the model must be a path or a fitted model a loader takes (loaders of objects: "
        f"{', '.join(found.able) or 'none installed'}). Found a {type_name(obj)}.",
    )


def register_loader(name: str, loader: Any, *, force: bool = False) -> LoaderInfo:
    """Add ``loader`` (a loader object or a class taking no arguments) under ``name``.

    Refuses to replace a known loader, an entry point included, unless ``force=True``.
    Returns the :class:`LoaderInfo` recorded for it (no distribution).
    """
    if not isinstance(name, str) or not name:
        raise InvalidInputError(f"name must be a non-empty string. Found {name!r}.")
    kind = loader if isinstance(loader, type) else type(loader)
    value = f"{kind.__module__}:{kind.__qualname__}"
    _discover()
    with _lock:
        if name in _entries and not force:
            raise InvalidInputError(
                f"loader {name!r} is already registered ({_entries[name].info}); pass "
                f"force=True to replace it. Found a second loader {value}."
            )
        if isinstance(loader, type):
            try:
                loader = loader()
            except Exception as error:
                raise InvalidInputError(
                    f"loader plugin {name!r} ({value}) must be a class that takes no "
                    f"arguments or a loader object. Found {type(error).__name__}: {error}."
                ) from error
        checked = _check_protocol(name, value, loader)
        info = LoaderInfo(name=name, value=value, distribution=None, version=None)
        _entries[name] = _Entry(info, None, checked)
        _infos[name] = info
        return info


def loader_for_url(url: str) -> tuple[ModelLoader, LoaderInfo]:
    """The one loader whose ``schemes`` claim the scheme of ``url`` (``http``, ``https``).

    Every plugin is imported to read its schemes; plugins that fail to import are left out
    and named in the error if no loader claims the scheme.
    """
    from urllib.parse import urlsplit

    scheme = urlsplit(url).scheme.lower()
    _discover()

    def schemes_of(loader: ModelLoader) -> tuple[str, ...]:
        return tuple(str(s).lower() for s in getattr(loader, "schemes", ()))

    def lists_schemes(name: str, loader: ModelLoader) -> str | None:
        schemes = schemes_of(loader)
        return f"{name} ({', '.join(schemes)})" if schemes else None

    with _lock:
        found = _claims(lists_schemes, lambda loader: scheme in schemes_of(loader))
    listing = "; ".join(found.able) or "(none installed)"
    if found.broken:
        listing += f"; not importable: {', '.join(found.broken)}"
    return found.the_one(
        "a model URL's scheme",
        repr(scheme),
        f"a model URL's scheme must be one a loader claims ({listing}). Found {scheme!r}.",
    )
