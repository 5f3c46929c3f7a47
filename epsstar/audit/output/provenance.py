"""Where an audit's result came from: :class:`Provenance`, typed, written to JSON only at
the edge (``provenance`` in ``audit.schema.json``).

It records what was read (the model's files and the data files, each with its SHA-256; the
reference models), how (the loader, how the columns were matched, the classes, the loss,
the engine, which sides were summarised), with which settings (seed, confidence) and
versions, when, by which command, and how long each step took.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Literal

from epsstar.audit.data.column_match import ColumnMatch
from epsstar.audit.data.files import FileDigest, digests_of
from epsstar.audit.data.summary_plans import SummaryPlans
from epsstar.audit.inputs.served import ServedSource
from epsstar.audit.model.folders import ModelFolder
from epsstar.audit.model.loading import ClassesFrom
from epsstar.audit.model.plugins import LoaderInfo, OutputKind
from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.statistics.names import EngineName, LossName

__all__ = ["EngineRun", "Provenance", "ReferenceModel", "Timings"]

#: The rule of the provenance's optional records: written only when they exist.
_OPTIONAL = json_rule(omit_if_none=True)


@dataclass(frozen=True, slots=True)
class ReferenceModel(JsonRecord):
    """A reference model file as the audit read it: its SHA-256, the loader that read it
    and every file it was read from (the model file, then e.g. ONNX external data)."""

    path: str
    sha256: str
    loader: str
    files: tuple[FileDigest, ...]

    @classmethod
    def of(
        cls, path: str | os.PathLike[str], loader: str, files: Iterable[str | os.PathLike[str]]
    ) -> ReferenceModel:
        """The record of the model at ``path`` loaded by ``loader`` from ``files``, whose
        digests are read now (the model file first, even when the loader does not list it)."""
        listed = [os.fspath(file) for file in files]
        if os.fspath(path) not in listed:
            listed.insert(0, os.fspath(path))
        return cls.from_digests(path, loader, digests_of(listed))

    @classmethod
    def from_digests(
        cls, path: str | os.PathLike[str], loader: str, digests: tuple[FileDigest, ...]
    ) -> ReferenceModel:
        """The record of the model at ``path`` whose files' digests are known already."""
        own = next(digest.sha256 for digest in digests if digest.path == os.fspath(path))
        return cls(os.fspath(path), own, loader, digests)


@dataclass(frozen=True, slots=True)
class EngineRun(JsonRecord):
    """Where the records were streamed: ``single`` (this process) or ``dask`` (the
    scheduler's address, or ``local``), with each side's number of partitions; the JSON of
    ``single`` holds its name alone."""

    name: EngineName
    scheduler: str | None = field(default=None, metadata=json_rule(skip=True))
    partitions: Mapping[Literal["train", "population"], int] | None = field(
        default=None, metadata=json_rule(skip=True)
    )

    @json_property(name="scheduler", after="scheduler", omit_if_none=True)
    def scheduler_shown(self) -> str | None:
        """The scheduler's address on Dask (``local``: a cluster started for the run)."""
        return None if self.name == "single" else self.scheduler or "local"

    @json_property(name="partitions", after="partitions", omit_if_none=True)
    def partitions_shown(self) -> Mapping[Literal["train", "population"], int] | None:
        """Each side's partitions on Dask, when known."""
        return None if self.name == "single" else self.partitions


@dataclass(frozen=True, slots=True)
class Timings(JsonRecord):
    """Seconds of each step of an audit, rounded to the millisecond: loading the model,
    streaming the data through it, the utility, the statistics, the attacks beyond the loss
    attack, the slices and the premise's readings (``None``: not run), and in all."""

    load: float
    inference: float
    statistics: float
    utility: float
    total: float
    attacks: float | None = field(default=None, metadata=json_rule(omit_if_none=True))
    slices: float | None = field(default=None, metadata=json_rule(omit_if_none=True))
    #: The blind baseline and the readings that read the records (user level, attribute).
    premise: float | None = field(default=None, metadata=json_rule(omit_if_none=True))

    def with_step(self, step: Literal["attacks", "slices", "premise"], seconds: float) -> Timings:
        """These timings with one more step, counted in the total."""
        rounded = round(seconds, 3)
        return replace(self, **{step: rounded}, total=round(self.total + seconds, 3))

    def steps(self) -> tuple[tuple[str, float], ...]:
        """Each step's seconds, in the order the JSON and the report list them (the
        fields' order)."""
        found = ((step.name, getattr(self, step.name)) for step in fields(self))
        return tuple((step, seconds) for step, seconds in found if seconds is not None)


@dataclass(frozen=True, slots=True)
class Provenance(JsonRecord):
    """Where an audit's result came from (see the module docstring).

    ``model_files`` are every file the model was read from (the model file first; none for
    a served model, whose ``served`` record says where and how it was reached and
    ``model`` is its URL without credentials);
    ``model_folder`` the model folder that named the model file (an MLflow folder), if any;
    ``train`` and ``population`` the data as given (files, or partitioned data sets and
    URLs on a Dask cluster) with their SHA-256 (of a data set: of its partitions' names
    and digests); ``shared_rows`` the population rows also among the training rows. Its
    JSON is the ``provenance`` of the JSON outputs; the optional records are written only
    when they exist.
    """

    model: str
    model_files: tuple[FileDigest, ...]
    loader: LoaderInfo
    output_kind: OutputKind
    loss: LossName
    label_column: str
    features: tuple[str, ...] | None
    columns: ColumnMatch = field(metadata=json_rule(flatten=True))
    input_shape: tuple[int, ...] | None
    classes: tuple[str, ...]
    classes_from: ClassesFrom
    train: str
    population: str
    train_sha256: str
    population_sha256: str
    shared_rows: int
    n_train: int
    n_population: int
    seed: int
    confidence: float
    epsstar_version: str
    python: str
    created: str
    command: str | None
    engine: EngineRun | None = field(default=None, metadata=_OPTIONAL)
    summaries: SummaryPlans | None = field(default=None, metadata=_OPTIONAL)
    seconds: Timings | None = field(default=None, metadata=_OPTIONAL)
    reference_models: tuple[ReferenceModel, ...] | None = field(default=None, metadata=_OPTIONAL)
    model_folder: ModelFolder | None = field(default=None, metadata=_OPTIONAL)
    #: The torch device a torch-based loader ran the model on (``--device``), else ``None``.
    device: str | None = field(default=None, metadata=_OPTIONAL)
    #: The intra-op threads the model's library ran with in this process (``--threads``,
    #: ``EPSSTAR_THREADS`` or the load-average rule of :mod:`epsstar.plumbing.runtime.threads`);
    #: ``None``: the library's own default, or chosen by each Dask worker.
    threads: int | None = field(default=None, metadata=_OPTIONAL)
    #: The server a served model was read from (``None``: a model file).
    served: ServedSource | None = field(default=None, metadata=_OPTIONAL)

    @json_property(after="model")
    def model_sha256(self) -> str | None:
        """The SHA-256 of the model file itself (``None``: a served model has no file)."""
        if self.served is not None:
            return None
        return next(f.sha256 for f in self.model_files if f.path == self.model)

    @property
    def files_read(self) -> tuple[tuple[str, str], ...]:
        """Every model file the audit read, as ``(what, path)``: the target's files (with
        sidecars such as ONNX external data) and each reference model's."""
        read = [("the model's file", file.path) for file in self.model_files]
        for model in self.reference_models or ():
            read += [(f"reference model {model.path!r}", file.path) for file in model.files]
        return tuple(read)
