"""One audit on a Dask cluster: every partition of both data sets is one task.

Each task runs on a worker: it loads the model by path (once per worker process), after
checking that the SHA-256 of the model file and of every file it reads beside it (ONNX
external data) are those this process recorded, streams its partition through the model
(:func:`epsstar.audit.engines.streaming.stream_table`, the single-process code) and sends back what
the statistics need of it: per-record losses, the AUROC's labels and scores, the count of
correct predictions, the row hashes and class counts of the data checks, and the partition's
SHA-256. :func:`stream_on_dask` joins the partitions in data-set order, so that the tables,
and hence the audit, are those of the single-process engine on the same rows.

For the reference-model attacks (``--attack lira rmia``) the same task also runs each
reference model over its partition, loaded by path and checked like the target, and sends
back every model's log-odds of the true label (8 bytes per row and model; the target's too
when the audit's loss is not the logit loss, whose negative they are).

What travels back is about 8 bytes per row for the losses, 8 for the row hashes and, below
:data:`~epsstar.audit.engines.streaming.MAX_AUROC_VALUES`, 16 (binary) or 8·(K+1) (K classes) for
the AUROC; the data themselves never reach this process.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.audit.attacks.references import ReferenceConfidences, check_stated_classes
from epsstar.audit.data.files import sha256_of
from epsstar.audit.data.partitions import (
    DataSet,
    dataset_digest,
    find_partitions,
    local_partition,
    partition_rows,
)
from epsstar.audit.data.tables import LabelMap
from epsstar.audit.engines.streaming import StreamedTable, stream_table
from epsstar.audit.engines.summaries import SummaryPlans, join_tables, summarise_table
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.summaries.loss_summary import LossSummary, SummaryPlan, merge_summaries

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.data.column_match import ColumnMatch
    from epsstar.audit.engines.dask_engine import Engine, TaskOutcome
    from epsstar.audit.model.loading import LoadedAuditModel

__all__ = ["DaskStreams", "PartitionProgress", "stream_on_dask"]

#: Models one worker process keeps loaded (the target and its reference models).
MAX_LOADED = 64


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
    #: The reference models' log-odds of the true label and the target's (``None``
    #: without reference models).
    attack_inputs: AttackInputs | None = None


#: The models this worker process loaded, by everything that defines them.
_LOADED: dict[ModelSpec, LoadedAuditModel] = {}


def _checked_model(spec: ModelSpec) -> LoadedAuditModel:
    """The model of ``spec``, loaded once per process, its files checked against the client's."""
    if spec in _LOADED:
        return _LOADED[spec]
    from epsstar.audit.model.loading import load_model

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
    if len(_LOADED) >= MAX_LOADED:
        _LOADED.clear()
    _LOADED[spec] = loaded
    return loaded


def _log_odds(
    model: LoadedAuditModel, path: Path, role: str, reading: StreamSpec, label_map: LabelMap
) -> FloatArray:
    """``model``'s log-odds of the true label on one partition (minus its logit loss)."""
    streamed = stream_table(
        model.model,
        path,
        role=role,
        label_column=reading.label_column,
        features=reading.features,
        batch_size=reading.batch_size,
        loss="logit",
        label_map=label_map,
        model_names=reading.model_names,
        input_shape=reading.input_shape,
    )
    return -streamed.losses


@dataclass(frozen=True, slots=True)
class Summarised:
    """How a worker summarises its partition: the side's plan (``None``: losses kept
    whole), the share of row hashes kept, and the partition's first row in its data set."""

    plan: SummaryPlan | None
    hash_rate: float
    offset: int


def stream_partition(
    model: ModelSpec,
    partition: str,
    storage_options: Mapping[str, Any],
    role: str,
    reading: StreamSpec,
    references: tuple[tuple[ModelSpec, StreamSpec], ...] = (),
    summarised: Summarised | None = None,
) -> tuple[StreamedTable, str, FloatArray | None]:
    """Dask task: one partition through the model; what it gave (summarised as
    ``summarised`` says, if given), the partition's SHA-256 and, with ``references``, the
    log-odds of the true label of the target (row 0) and of each reference model (rows
    1..K)."""
    streamed, digest, log_odds = _streamed_partition(
        model, partition, storage_options, role, reading, references
    )
    if summarised is not None:
        streamed = summarise_table(
            streamed, summarised.plan, summarised.hash_rate, offset=summarised.offset
        )
    return streamed, digest, log_odds


def _streamed_partition(
    model: ModelSpec,
    partition: str,
    storage_options: Mapping[str, Any],
    role: str,
    reading: StreamSpec,
    references: tuple[tuple[ModelSpec, StreamSpec], ...],
) -> tuple[StreamedTable, str, FloatArray | None]:
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
        if not references:
            return streamed, digest, None
        label_map = streamed.label_map
        target = (
            -streamed.losses
            if reading.loss == "logit"
            else _log_odds(loaded, path, role, reading, label_map)
        )
        rows = [target]
        for spec, stream in references:
            try:
                rows.append(_log_odds(_checked_model(spec), path, role, stream, label_map))
            except InvalidInputError as error:
                raise type(error)(f"reference model {spec.path!r}: {error}") from None
    return streamed, digest, np.vstack(rows)


def _file_digests(model: object, path: Path) -> tuple[tuple[str, str], ...]:
    """(file, SHA-256) of the model file and of every file the loader read beside it."""
    files = [Path(f) for f in getattr(model, "files", (path,))]
    if path not in files:
        files.insert(0, path)
    return tuple((str(f), sha256_of(f)) for f in files)


def _model_spec(loaded: LoadedAuditModel, model: Path, reading: Any, trust: bool) -> ModelSpec:
    return ModelSpec(
        path=str(model),
        loader=loaded.loader.name,
        outputs=reading.outputs,
        trust=trust,
        classes=loaded.classes if loaded.classes_from == "argument" else None,
        sha256=_file_digests(loaded.model, model),
    )


def _columns(data: DataSet) -> tuple[str, ...]:
    """The column names of the data set's first partition."""
    from epsstar.audit.data.tables import read_schema

    first = data.partitions[0]
    if first.endswith(".parquet") and not data.local:
        import fsspec  # type: ignore[import-untyped]
        import pyarrow.parquet as pq

        with fsspec.open(first, "rb", **data.storage_options) as stream:
            return tuple(str(name) for name in pq.ParquetFile(stream).schema_arrow.names)
    with local_partition(first, data.storage_options) as path:
        return read_schema(path).columns


def _matches(
    model: object,
    path: Path,
    data: dict[str, DataSet],
    columns: Mapping[str, tuple[str, ...]],
    reading: Any,
) -> dict[str, ColumnMatch]:
    """How each data set's ``columns`` (its first partition's) reach the model loaded from
    ``path``."""
    from epsstar.audit.data.column_match import match_model_columns

    return {
        role: match_model_columns(
            model,
            columns[role],
            reading.label_column,
            features=reading.features,
            model_path=path,
            data=Path(found.partitions[0]),
        )
        for role, found in data.items()
    }


def _stream_spec(match: ColumnMatch, reading: Any) -> StreamSpec:
    """How a partition is streamed through a model whose columns ``match`` found."""
    return StreamSpec(
        label_column=reading.label_column,
        features=tuple(match.file_columns),
        model_names=tuple(match.model_names) if match.renamed else None,
        batch_size=reading.batch_size,
        loss=reading.loss,
        outputs_requested=reading.outputs is not None,
        input_shape=reading.input_shape,
    )


@dataclass(frozen=True, slots=True)
class _References:
    """The reference models as the client loaded them (for their classes), how a worker
    loads each, and how each reads each side's partitions."""

    loaded: tuple[tuple[Any, Path], ...] = ()
    specs: tuple[ModelSpec, ...] = ()
    streams: Mapping[str, tuple[StreamSpec, ...]] = field(default_factory=dict)

    def for_role(self, role: str) -> tuple[tuple[ModelSpec, StreamSpec], ...]:
        return tuple(zip(self.specs, self.streams.get(role, ()), strict=True))


def _references(
    paths: Sequence[Path],
    data: dict[str, DataSet],
    columns: Mapping[str, tuple[str, ...]],
    reading: Any,
    trust: bool,
) -> _References:
    """Load every reference model here (its classes are checked once the label map is
    known) and say how a worker loads it and reads each side with it."""
    from epsstar.audit.model.plugins import loader_for_path

    loaded, specs = [], []
    streams: dict[str, list[StreamSpec]] = {role: [] for role in data}
    for path in paths:
        try:
            plugin, info = loader_for_path(path)
            model = plugin.load(path, outputs=None, trust=trust)
            for role, match in _matches(model, path, data, columns, reading).items():
                streams[role].append(_stream_spec(match, reading))
        except InvalidInputError as error:
            raise type(error)(f"reference model {str(path)!r}: {error}") from None
        sha256 = _file_digests(model, path)
        specs.append(ModelSpec(str(path), info.name, None, trust, None, sha256))
        loaded.append((model, path))
    frozen = {role: tuple(found) for role, found in streams.items()}
    return _References(tuple(loaded), tuple(specs), frozen)


def _tasks(
    spec: ModelSpec,
    data: dict[str, DataSet],
    matches: dict[str, ColumnMatch],
    reading: Any,
    references: _References,
    summarising: tuple[SummaryPlans, dict[str, tuple[int, ...]]] | None,
) -> list[tuple[Any, ...]]:
    """One :func:`stream_partition` task per partition, the training data's first (each
    told how to summarise its partition when ``summarising`` gives the plans and every
    partition's rows)."""
    tasks: list[tuple[Any, ...]] = []
    for role, found in data.items():
        stream = _stream_spec(matches[role], reading)
        with_references = references.for_role(role)
        how: list[Summarised | None] = [None] * len(found.partitions)
        if summarising is not None:
            plans, rows = summarising
            starts = np.cumsum((0, *rows[role][:-1]))
            how = [Summarised(plans.for_role(role), plans.hash_rate, int(at)) for at in starts]
        tasks += [
            (spec, part, found.storage_options, role, stream, with_references, summarised)
            for part, summarised in zip(found.partitions, how, strict=True)
        ]
    return tasks


class _Collected:
    """The partitions' results as they arrive: progress told to a
    :class:`PartitionProgress`, each partition's summary merged into its side's at once
    (the partition kept without it), its rows checked against its footer's."""

    def __init__(self, tasks: list[tuple[Any, ...]], progress: object) -> None:
        self.roles = [task[3] for task in tasks]
        self.totals = {role: self.roles.count(role) for role in self.roles}
        self.done = dict.fromkeys(self.roles, 0)
        self.rows = dict.fromkeys(self.roles, 0)
        self.parts: dict[int, tuple[StreamedTable, str, FloatArray | None]] = {}
        self.summaries: dict[str, LossSummary] = {}
        self.progress = progress if isinstance(progress, PartitionProgress) else None
        self.started = time.perf_counter()

    def __call__(self, outcome: TaskOutcome[tuple[StreamedTable, str, Any]]) -> None:
        role = self.roles[outcome.index]
        self.done[role] += 1
        if outcome.value is not None:
            table, digest, log_odds = outcome.value
            self.rows[role] += table.rows
            if table.summary is not None:
                # The sample is the partition's sampled losses, kept with it (table.losses)
                # and joined in partition order at the end, not merged here.
                arrived = dataclasses.replace(table.summary, sample=np.empty(0))
                running = self.summaries.get(role)
                both = [arrived] if running is None else [running, arrived]
                self.summaries[role] = merge_summaries(both)
                table = dataclasses.replace(table, summary=None)
            self.parts[outcome.index] = (table, digest, log_odds)
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
    found: DataSet,
    results: list[tuple[StreamedTable, str, FloatArray | None]],
    role: str,
    summary: LossSummary | None,
) -> tuple[StreamedTable, str, FloatArray | None]:
    """One side's joined table (with its merged ``summary``, whose sample is put in
    partition order), its data set's digest and its log-odds (target, then each reference
    model; ``None`` without reference models)."""
    named = [
        (part.rsplit("/", 1)[-1], digest)
        for part, (_, digest, _) in zip(found.partitions, results, strict=True)
    ]
    rows = [log_odds for _, _, log_odds in results]
    joined = None if any(r is None for r in rows) else np.hstack(rows)  # type: ignore[arg-type]
    table = join_tables([streamed for streamed, _, _ in results], role)
    if summary is not None:
        summary = dataclasses.replace(summary, sample=table.losses)
        table = dataclasses.replace(table, summary=summary)
    return table, dataset_digest(named), joined


def _check_rows(
    tasks: list[tuple[Any, ...]],
    collected: _Collected,
    summarising: tuple[SummaryPlans, dict[str, tuple[int, ...]]] | None,
) -> None:
    """Refuse a partition that streamed other rows than its Parquet footer says (the
    positions that choose each record's halves would be wrong)."""
    if summarising is None:
        return
    footers = [n for role in ("train", "population") for n in summarising[1][role]]
    for index, expected in enumerate(footers):
        found = collected.parts[index][0].rows
        if found != expected:
            raise InvalidInputError(
                f"{tasks[index][1]}: a partition must stream the {expected:,} rows its "
                f"Parquet footer records. Found {found:,}."
            )


def _without_empty(
    data: dict[str, DataSet],
) -> tuple[dict[str, DataSet], dict[str, tuple[int, ...]] | None]:
    """The data sets without the partitions whose Parquet footer records no row (writers of
    partitioned data sets leave such files), and every partition's rows when each side's
    footers can be read (``None`` otherwise). A side whose partitions are all empty keeps
    them, to be refused as empty when streamed."""
    rows = {role: partition_rows(found) for role, found in data.items()}
    if any(found is None for found in rows.values()):
        return data, None
    kept: dict[str, DataSet] = {}
    known: dict[str, tuple[int, ...]] = {}
    for role, found in data.items():
        counts = rows[role]
        assert counts is not None
        chosen = [i for i, n in enumerate(counts) if n > 0] or list(range(len(counts)))
        parts = tuple(found.partitions[i] for i in chosen)
        kept[role] = dataclasses.replace(found, partitions=parts)
        known[role] = tuple(counts[i] for i in chosen)
    return kept, known


def _summarising(
    rows: dict[str, tuple[int, ...]] | None, seed: int | None
) -> tuple[SummaryPlans, dict[str, tuple[int, ...]]] | None:
    """The summary plans and each partition's rows, when the audit summarises (``seed``
    given), a side is large enough and every partition's rows are in its Parquet footer."""
    if seed is None or rows is None:
        return None
    plans = SummaryPlans.for_rows(sum(rows["train"]), sum(rows["population"]), seed=seed)
    return None if plans is None else (plans, rows)


def _attack_inputs(
    sides: Mapping[str, tuple[StreamedTable, str, FloatArray | None]],
    references: _References,
    label_map: LabelMap,
) -> AttackInputs | None:
    """The log-odds the reference-model attacks take, the reference models' classes
    checked against the target's."""
    train, population = sides["train"][2], sides["population"][2]
    if train is None or population is None or not references.specs:
        return None
    for model, path in references.loaded:
        check_stated_classes(getattr(model, "classes", None), label_map, path)
    models = tuple(
        {
            "path": spec.path,
            "sha256": dict(spec.sha256)[spec.path],
            "loader": spec.loader,
            "files": [{"path": path, "sha256": digest} for path, digest in spec.sha256],
        }
        for spec in references.specs
    )
    confidences = ReferenceConfidences(train[1:], population[1:], models)
    return AttackInputs((train[0], population[0]), confidences)


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
    reference_models: Sequence[Path] = (),
    summarise_seed: int | None = None,
) -> DaskStreams:
    """Stream the training and population data sets (``sources``) on ``engine``'s cluster.

    ``reading`` holds the audit's streaming settings (``epsstar.audit.run``'s); ``progress``,
    if it is a :class:`PartitionProgress`, is told as partitions finish; the
    ``reference_models`` run over every partition too (``attack_inputs``). With
    ``summarise_seed`` (the audit's statistics can be computed from summaries), a side
    too large to hold whole is summarised on the workers (:mod:`epsstar.audit.engines.summaries`).
    """
    from epsstar.audit.engines.dask_engine import dask_client, run_tasks

    _refuse_same(sources)
    found = {
        role: find_partitions(source, storage_options)
        for role, source in zip(("train", "population"), sources, strict=True)
    }
    data, rows = _without_empty(found)
    # Each side's columns are read once (from its first partition, maybe over the network).
    columns = {role: _columns(found) for role, found in data.items()}
    matches = _matches(loaded.model, model, data, columns, reading)
    references = _references(reference_models, data, columns, reading, trust)
    summarising = _summarising(rows, summarise_seed)
    spec = _model_spec(loaded, model, reading, trust)
    tasks = _tasks(spec, data, matches, reading, references, summarising)
    collected = _Collected(tasks, progress)
    with dask_client(engine) as client:
        outcomes = run_tasks(
            client, stream_partition, tasks, collected, name="epsstar-partition", keep=False
        )
    failed = next((outcome for outcome in outcomes if outcome.error is not None), None)
    if failed is not None:
        where, error = tasks[failed.index][1], str(failed.error)
        raise InvalidInputError(error if error.startswith(where) else f"{where}: {error}")
    _check_rows(tasks, collected, summarising)
    sides = {
        role: _side(
            data[role],
            [collected.parts[i] for i in range(len(tasks)) if collected.roles[i] == role],
            role,
            collected.summaries.get(role),
        )
        for role in data
    }
    train, population = sides["train"][0], sides["population"][0]
    attack_inputs = _attack_inputs(sides, references, train.label_map)
    if len(population.label_map) != len(train.label_map):
        raise InvalidInputError(
            f"the model's predictions on the population data must stand for its "
            f"{len(train.label_map)} classes, as before. Found {population.n_outputs}."
        )
    digests = {role: digest for role, (_, digest, _) in sides.items()}
    _refuse_same(sources, digests)
    partitions = {role: len(found.partitions) for role, found in data.items()}
    return DaskStreams(train, population, matches["train"], digests, partitions, attack_inputs)
