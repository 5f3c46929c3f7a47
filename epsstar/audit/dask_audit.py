"""One audit on a Dask cluster: every partition of both data sets is one task.

Each task runs on a worker: it loads the model by path (once per worker process), after
checking that the SHA-256 of the model file and of every file it reads beside it (ONNX
external data) are those this process recorded, streams its partition through the model
(:func:`epsstar.audit.streaming.stream_table`, the single-process code) and sends back what
the statistics need of it: per-record losses, the AUROC's labels and scores, the count of
correct predictions, the row hashes and class counts of the data checks, and the partition's
SHA-256. :func:`stream_on_dask` joins the partitions in data-set order, so that the tables,
and hence the audit, are those of the single-process engine on the same rows.

What travels back is about 8 bytes per row for the losses, 8 for the row hashes and, below
:data:`~epsstar.audit.streaming.MAX_AUROC_VALUES`, 16 (binary) or 8·(K+1) (K classes) for
the AUROC; the data themselves never reach this process.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from epsstar.audit.data_checks import TableScan
from epsstar.audit.files import sha256_of
from epsstar.audit.partitions import DataSet, dataset_digest, find_partitions, local_partition
from epsstar.audit.streaming import StreamedTable, stream_table
from epsstar.exceptions import InputFileError, InvalidInputError

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.column_match import ColumnMatch
    from epsstar.audit.dask_engine import Engine, TaskOutcome
    from epsstar.audit.run import LoadedAuditModel

__all__ = ["DaskStreams", "PartitionProgress", "stream_on_dask"]


@runtime_checkable
class PartitionProgress(Protocol):
    """Told as each partition is done: its side, how many of the side's partitions are done
    and in all, the side's rows so far, and the seconds since the first task was sent."""

    def partition_done(self, role: str, done: int, total: int, rows: int, seconds: float) -> None:
        """A partition of ``role`` (``"train"`` or ``"population"``) is done."""
        ...


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """How a worker loads the model, and the SHA-256 each of its files must have."""

    path: str
    loader: str | None
    outputs: str | None
    trust: bool
    classes: tuple[object, ...] | None
    sha256: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class StreamSpec:
    """How a worker streams a partition (the arguments of ``stream_table``)."""

    label_column: str
    features: tuple[str, ...] | None
    model_names: tuple[str, ...] | None
    batch_size: int
    loss: str
    outputs_requested: bool
    input_shape: tuple[int, ...] | None


@dataclass(frozen=True, slots=True)
class DaskStreams:
    """Both tables as streamed on the cluster, the column match, the data sets' digests and
    how many partitions each had."""

    train: StreamedTable
    population: StreamedTable
    match: ColumnMatch
    digests: dict[str, str]
    partitions: dict[str, int]


#: The models this worker process loaded, by everything that defines them.
_LOADED: dict[ModelSpec, LoadedAuditModel] = {}


def _checked_model(spec: ModelSpec) -> LoadedAuditModel:
    """The model of ``spec``, loaded once per process, its files checked against the client's."""
    if spec in _LOADED:
        return _LOADED[spec]
    from epsstar.audit.run import load_model

    for path, expected in spec.sha256:
        try:
            found = sha256_of(Path(path))
        except OSError as error:
            raise InputFileError(
                f"a worker cannot read a model file ({error}). Found {path!r}."
            ) from None
        if found != expected:
            raise InputFileError(
                f"a worker's copy of a model file differs from the one audited here (sha256 "
                f"{found[:16]}... instead of {expected[:16]}...). Found {path!r}."
            )
    loaded = load_model(
        Path(spec.path),
        loader=spec.loader,
        outputs=spec.outputs,  # type: ignore[arg-type]
        trust=spec.trust,
        classes=spec.classes,
    )
    _LOADED.clear()  # one model at a time per worker process
    _LOADED[spec] = loaded
    return loaded


def stream_partition(
    model: ModelSpec,
    partition: str,
    storage_options: Mapping[str, Any],
    role: str,
    reading: StreamSpec,
) -> tuple[StreamedTable, str]:
    """Dask task: one partition through the model; what it gave and the partition's SHA-256."""
    loaded = _checked_model(model)
    with local_partition(partition, storage_options) as path:
        digest = sha256_of(path)
        streamed = stream_table(
            loaded.model,
            path,
            role=role,
            label_column=reading.label_column,
            features=reading.features,
            batch_size=reading.batch_size,
            loss=reading.loss,  # type: ignore[arg-type]
            classes=loaded.classes,
            outputs_requested=reading.outputs_requested,
            model_names=reading.model_names,
            input_shape=reading.input_shape,
        )
    return streamed, digest


def _joined(parts: Sequence[StreamedTable], role: str) -> StreamedTable:
    """The partitions of one table as one, in order (the AUROC's scores kept within the
    same budget as a single stream's)."""
    from epsstar.audit import streaming

    first = parts[0]
    for part in parts[1:]:
        if part.n_outputs != first.n_outputs or part.label_map != first.label_map:
            raise InvalidInputError(
                f"the model's predictions on the {role} data must stand for its "
                f"{len(first.label_map)} classes, as before. Found {part.n_outputs}."
            )
    rows = sum(part.rows for part in parts)
    labels = scores = None
    if all(part.labels is not None and part.scores is not None for part in parts):
        width = 1 if first.scores is None or first.scores.ndim == 1 else first.scores.shape[1]
        if rows * width <= streaming.MAX_AUROC_VALUES:
            labels = np.concatenate([part.labels for part in parts])
            scores = np.concatenate([part.scores for part in parts])
    return StreamedTable(
        losses=np.concatenate([part.losses for part in parts]),
        labels=labels,
        scores=scores,
        correct=sum(part.correct for part in parts),
        rows=rows,
        n_outputs=first.n_outputs,
        label_map=first.label_map,
        scan=TableScan(
            np.concatenate([part.scan.hashes for part in parts]),
            np.sum([part.scan.class_counts for part in parts], axis=0),
        ),
    )


def _model_spec(loaded: LoadedAuditModel, model: Path, reading: Any, trust: bool) -> ModelSpec:
    files = [Path(f) for f in getattr(loaded.model, "files", (model,))]
    if model not in files:
        files.insert(0, model)
    return ModelSpec(
        path=str(model),
        loader=loaded.loader.name,
        outputs=reading.outputs,
        trust=trust,
        classes=loaded.classes if loaded.classes_from == "argument" else None,
        sha256=tuple((str(f), sha256_of(f)) for f in files),
    )


def _columns(data: DataSet) -> tuple[str, ...]:
    """The column names of the data set's first partition."""
    from epsstar.audit.tables import read_schema

    first = data.partitions[0]
    if first.endswith(".parquet") and not data.local:
        import fsspec  # type: ignore[import-untyped]
        import pyarrow.parquet as pq

        with fsspec.open(first, "rb", **data.storage_options) as stream:
            return tuple(str(name) for name in pq.ParquetFile(stream).schema_arrow.names)
    with local_partition(first, data.storage_options) as path:
        return read_schema(path).columns


def _matches(
    loaded: LoadedAuditModel, model: Path, data: dict[str, DataSet], reading: Any
) -> dict[str, ColumnMatch]:
    """How each data set's columns reach the model (from its first partition's columns)."""
    from epsstar.audit.column_match import match_model_columns

    return {
        role: match_model_columns(
            loaded.model,
            _columns(found),
            reading.label_column,
            features=reading.features,
            model_path=model,
            data=Path(found.partitions[0]),
        )
        for role, found in data.items()
    }


def _tasks(
    spec: ModelSpec, data: dict[str, DataSet], matches: dict[str, ColumnMatch], reading: Any
) -> list[tuple[ModelSpec, str, Mapping[str, Any], str, StreamSpec]]:
    """One :func:`stream_partition` task per partition, the training data's first."""
    tasks = []
    for role, found in data.items():
        match = matches[role]
        stream = StreamSpec(
            label_column=reading.label_column,
            features=tuple(match.file_columns),
            model_names=tuple(match.model_names) if match.renamed else None,
            batch_size=reading.batch_size,
            loss=reading.loss,
            outputs_requested=reading.outputs is not None,
            input_shape=reading.input_shape,
        )
        tasks += [(spec, part, found.storage_options, role, stream) for part in found.partitions]
    return tasks


class _Counter:
    """Partitions and rows done per side, told to a :class:`PartitionProgress`."""

    def __init__(self, roles: list[str], progress: object) -> None:
        self.roles = roles
        self.totals = {role: roles.count(role) for role in roles}
        self.done = dict.fromkeys(roles, 0)
        self.rows = dict.fromkeys(roles, 0)
        self.progress = progress if isinstance(progress, PartitionProgress) else None
        self.started = time.perf_counter()

    def __call__(self, outcome: TaskOutcome[tuple[StreamedTable, str]]) -> None:
        role = self.roles[outcome.index]
        self.done[role] += 1
        if outcome.value is not None:
            self.rows[role] += outcome.value[0].rows
        if self.progress is not None:
            seconds = time.perf_counter() - self.started
            self.progress.partition_done(
                role, self.done[role], self.totals[role], self.rows[role], seconds
            )


def _refuse_same(sources: tuple[str, str], digests: dict[str, str] | None = None) -> None:
    """Refuse one data set, or two with the same content, as both sides."""
    if digests is None and sources[0] == sources[1]:
        raise InputFileError(
            f"the training and population data must be different data sets: the same records "
            f"on both sides give Epsilon* = 0 whatever the model leaks. Found {sources[0]!r} "
            f"as both."
        )
    if digests is not None and digests["train"] == digests["population"]:
        raise InputFileError(
            f"the training and population data must differ: two data sets with the same "
            f"content give Epsilon* = 0 whatever the model leaks. Found {sources[0]!r} and "
            f"{sources[1]!r}, both with sha256 {digests['train'][:16]}..."
        )


def _side(
    found: DataSet, results: list[tuple[StreamedTable, str]], role: str
) -> tuple[StreamedTable, str]:
    """One side's joined table and its data set's digest."""
    named = [
        (part.rsplit("/", 1)[-1], digest)
        for part, (_, digest) in zip(found.partitions, results, strict=True)
    ]
    return _joined([streamed for streamed, _ in results], role), dataset_digest(named)


def stream_on_dask(
    loaded: LoadedAuditModel,
    model: Path,
    sources: tuple[str, str],
    reading: Any,
    engine: Engine,
    *,
    trust: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    progress: object = None,
) -> DaskStreams:
    """Stream the training and population data sets (``sources``) on ``engine``'s cluster.

    ``reading`` holds the audit's streaming settings (``epsstar.audit.run``'s); ``progress``,
    if it is a :class:`PartitionProgress`, is told as partitions finish.
    """
    from epsstar.audit.dask_engine import dask_client, run_tasks

    _refuse_same(sources)
    data = {
        role: find_partitions(source, storage_options)
        for role, source in zip(("train", "population"), sources, strict=True)
    }
    matches = _matches(loaded, model, data, reading)
    tasks = _tasks(_model_spec(loaded, model, reading, trust), data, matches, reading)
    roles = [task[3] for task in tasks]
    with dask_client(engine) as client:
        outcomes = run_tasks(
            client, stream_partition, tasks, _Counter(roles, progress), name="epsstar-partition"
        )
    failed = next((outcome for outcome in outcomes if outcome.value is None), None)
    if failed is not None:
        raise InvalidInputError(f"{tasks[failed.index][1]}: {failed.error}")
    sides = {
        role: _side(
            data[role],
            [o.value for o in outcomes if roles[o.index] == role and o.value is not None],
            role,
        )
        for role in data
    }
    train, population = sides["train"][0], sides["population"][0]
    if len(population.label_map) != len(train.label_map):
        raise InvalidInputError(
            f"the model's predictions on the population data must stand for its "
            f"{len(train.label_map)} classes, as before. Found {population.n_outputs}."
        )
    digests = {role: digest for role, (_, digest) in sides.items()}
    _refuse_same(sources, digests)
    partitions = {role: len(found.partitions) for role, found in data.items()}
    return DaskStreams(train, population, matches["train"], digests, partitions)
