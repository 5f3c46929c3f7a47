"""One audit on a Dask cluster: every partition of both data sets is one task.

Each task runs on a worker: it loads the model by path (once per worker process), after
checking that the SHA-256 of the model file and of every file it reads beside it (ONNX
external data) are those this process recorded, streams its partition through the model
(:func:`epsstar.audit.engines.streaming.stream_table`, the single-process code) and sends back what
the statistics need of it: per-record losses, the AUROC's labels and scores, the count of
correct predictions, the row hashes and class counts of the data checks, and the partition's
SHA-256. :func:`stream_on_dask` joins the partitions in data-set order, so that the tables,
and hence the audit, are those of the single-process engine on the same rows.

For the blind baseline (:mod:`epsstar.audit.premise`) the task also keeps a seeded random
sample of its partition's records (:mod:`epsstar.audit.engines.record_sample`), drawn with
the keys the single process gives the same rows when the partition's first row is known
from the Parquet footers; this process joins the partitions' samples into the single
process's sample (pruning, as they arrive, the rows that can no longer be in it).

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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeAlias, runtime_checkable

import numpy as np

from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.audit.attacks.references import ReferenceConfidences, check_stated_classes
from epsstar.audit.data.partitions import (
    DataSet,
    StorageOptions,
    dataset_digest,
    find_partitions,
    local_partition,
    partition_rows,
)
from epsstar.audit.data.reading import Role, TableRead, Tables
from epsstar.audit.data.records import Records
from epsstar.audit.data.summary_plans import SummaryPlans
from epsstar.audit.data.tables.labels import LabelMap
from epsstar.audit.engines.one_pass import partition_scores
from epsstar.audit.engines.record_sample import (
    RecordSample,
    joined_sample,
    sample_seed,
    sampled_records,
)
from epsstar.audit.engines.streaming import StreamedTable, stream_table
from epsstar.audit.engines.summaries import join_tables, summarise_table
from epsstar.audit.engines.worker_models import ModelSpec, checked_model, model_spec
from epsstar.audit.model.loading import LoadedAuditModel, ModelFile
from epsstar.audit.model.plugins import LoadedModel
from epsstar.audit.output.provenance import ReferenceModel
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.plumbing.files.digests import sha256_of
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.summaries.loss_summary import LossSummary, SummaryPlan, merge_summaries

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.data.column_match import ColumnMatch
    from epsstar.audit.engines.dask_engine import Engine, TaskOutcome

__all__ = ["DaskStreams", "PartitionProgress", "stream_on_dask"]

ROLES: tuple[Role, Role] = ("train", "population")


@runtime_checkable
class PartitionProgress(Protocol):
    """Told as each partition is done: its side, how many of the side's partitions are done
    and in all, the side's rows so far, and the seconds since the first task was sent."""

    def partition_done(self, role: str, done: int, total: int, rows: int, seconds: float) -> None:
        """A partition of ``role`` (``"train"`` or ``"population"``) is done."""
        ...


@dataclass(frozen=True, slots=True)
class DaskStreams:
    """Both tables as streamed on the cluster, the column match, the data sets' digests and
    how many partitions each had."""

    train: StreamedTable
    population: StreamedTable
    match: ColumnMatch
    digests: dict[Role, str]
    partitions: dict[Role, int]
    #: The reference models' log-odds of the true label and the target's (``None``
    #: without reference models).
    attack_inputs: AttackInputs | None = None
    #: The blind baseline's records, sampled on the workers (``None``: not asked for).
    records: Records | None = None


#: One partition's task: the model, the partition, the storage options, how it is read,
#: the reference models with how each reads it, how to summarise it and how to sample it.
_Task: TypeAlias = tuple[
    ModelSpec,
    str,
    StorageOptions,
    TableRead,
    tuple[tuple[ModelSpec, TableRead], ...],
    "Summarised | None",
    "Sampled | None",
]
#: What a task sends back: the partition's table, its SHA-256, the models' log-odds and its
#: sample of records.
_Streamed: TypeAlias = tuple[StreamedTable, str, FloatArray | None, RecordSample | None]


@dataclass(frozen=True, slots=True)
class Summarised:
    """How a worker summarises its partition: the side's plan (``None``: losses kept
    whole), the share of row hashes kept, and the partition's first row in its data set."""

    plan: SummaryPlan | None
    hash_rate: float
    offset: int


@dataclass(frozen=True, slots=True)
class Sampled:
    """How a worker samples its partition's records for the blind baseline: at most
    ``limit``, keyed by ``seed``'s stream past its first ``skip`` keys (see
    :class:`~epsstar.audit.engines.record_sample.RecordSample`)."""

    limit: int
    seed: tuple[int, ...]
    skip: int

    def sample(self) -> RecordSample:
        return RecordSample(self.limit, self.seed, skip=self.skip)


def stream_partition(
    model: ModelSpec,
    partition: str,
    storage_options: StorageOptions,
    read: TableRead,
    references: tuple[tuple[ModelSpec, TableRead], ...] = (),
    summarised: Summarised | None = None,
    sampled: Sampled | None = None,
) -> _Streamed:
    """Dask task: one partition through the model, read as ``read`` says; what it gave
    (summarised as ``summarised`` says, if given), the partition's SHA-256, with
    ``references`` the log-odds of the true label of the target (row 0) and of each
    reference model (rows 1..K), and with ``sampled`` its sample of records."""
    sample = None if sampled is None else sampled.sample()
    streamed, digest, log_odds = _streamed_partition(
        model, partition, storage_options, read, (references, sample)
    )
    if summarised is not None:
        streamed = summarise_table(
            streamed, summarised.plan, summarised.hash_rate, offset=summarised.offset
        )
    return streamed, digest, log_odds, sample


def _streamed_partition(
    model: ModelSpec,
    partition: str,
    storage_options: StorageOptions,
    read: TableRead,
    riders: tuple[tuple[tuple[ModelSpec, TableRead], ...], RecordSample | None],
) -> tuple[StreamedTable, str, FloatArray | None]:
    references, sample = riders
    loaded = checked_model(model)
    with local_partition(partition, storage_options) as path:
        digest = sha256_of(path)
        here = replace(read, path=path)
        if not references:
            streamed = stream_table(loaded.model, here, classes=loaded.classes, sample=sample)
            return streamed, digest, None
        streamed, log_odds = _with_references(loaded, here, references, sample)
    return streamed, digest, log_odds


def _reference_on(spec: ModelSpec, read: TableRead) -> tuple[LoadedModel, Path, TableRead]:
    """A reference model loaded here, and its read of the partition ``read`` names."""
    try:
        return checked_model(spec).model, Path(spec.file.path), read
    except InvalidInputError as error:
        raise type(error)(f"reference model {str(spec.file.path)!r}: {error}") from None


def _with_references(
    loaded: LoadedAuditModel,
    here: TableRead,
    references: tuple[tuple[ModelSpec, TableRead], ...],
    sample: RecordSample | None,
) -> tuple[StreamedTable, FloatArray]:
    """The partition streamed through the target with the reference models that read it alike
    riding on the same read (:mod:`.one_pass`), the others streamed after; the log-odds of the
    target (row 0) and of each reference model (rows 1..K)."""
    theirs = [_reference_on(spec, replace(read_of, path=here.path)) for spec, read_of in references]
    scores, others = partition_scores(loaded.model, here, theirs)
    streamed = stream_table(
        loaded.model, here, classes=loaded.classes, scorer=scores, sample=sample
    )
    rows = scores.rider_log_odds(len(theirs))
    for index in others:
        model, model_path, read_of = theirs[index]
        try:
            rows[index] = -stream_table(
                model, replace(read_of, loss="logit"), label_map=streamed.label_map
            ).losses
        except InvalidInputError as error:
            raise type(error)(f"reference model {str(model_path)!r}: {error}") from None
    target = scores.target_log_odds(streamed.losses)
    return streamed, np.vstack([target, *(row for row in rows if row is not None)])


def _columns(data: DataSet) -> tuple[str, ...]:
    """The column names of the data set's first partition."""
    from epsstar.audit.data.tables.formats import read_schema
    from epsstar.audit.data.tables.parquet_files import parquet_columns

    first = data.partitions[0]
    if first.endswith(".parquet") and not data.local:
        import fsspec
        import pyarrow.parquet as pq

        with fsspec.open(first, "rb", **data.storage_options) as stream:
            return parquet_columns(pq.ParquetFile(stream).schema_arrow)
    with local_partition(first, data.storage_options) as path:
        return read_schema(path).columns


def _reads(
    model: object,
    path: Path,
    tables: Tables,
    columns: Mapping[Role, tuple[str, ...]],
    outputs_requested: bool,
) -> dict[Role, TableRead]:
    """How each data set reaches the model loaded from ``path``, its columns matched on
    ``columns`` (its first partition's)."""
    return {
        role: tables.read(
            role,
            tables.match(model, role, path, columns=columns[role]),
            path=tables.source(role),
            outputs_requested=outputs_requested,
        )
        for role in columns
    }


@dataclass(frozen=True, slots=True)
class _References:
    """The reference models as the client loaded them (for their classes), how a worker
    loads each, and how each reads each side's partitions."""

    loaded: tuple[tuple[LoadedModel, Path], ...] = ()
    specs: tuple[ModelSpec, ...] = ()
    reads: Mapping[Role, tuple[TableRead, ...]] = field(default_factory=dict)

    def for_role(self, role: Role) -> tuple[tuple[ModelSpec, TableRead], ...]:
        return tuple(zip(self.specs, self.reads.get(role, ()), strict=True))


def _references(
    paths: Sequence[Path],
    tables: Tables,
    columns: Mapping[Role, tuple[str, ...]],
    trust: bool,
) -> _References:
    """Load every reference model here (its classes are checked once the label map is
    known) and say how a worker loads it and reads each side with it."""
    from epsstar.audit.model.plugins import loader_for_path

    loaded, specs = [], []
    reads: dict[Role, list[TableRead]] = {role: [] for role in columns}
    for path in paths:
        try:
            plugin, info = loader_for_path(path)
            model = plugin.load(path, outputs=None, trust=trust)
            for role, read in _reads(model, path, tables, columns, False).items():
                reads[role].append(replace(read, loss="logit"))
        except InvalidInputError as error:
            raise type(error)(f"reference model {str(path)!r}: {error}") from None
        specs.append(model_spec(ModelFile(path, info.name, trust=trust), model))
        loaded.append((model, path))
    frozen = {role: tuple(found) for role, found in reads.items()}
    return _References(tuple(loaded), tuple(specs), frozen)


def _sampled(
    found: DataSet, role: Role, rows: tuple[int, ...] | None, sampling: tuple[int, int] | None
) -> list[Sampled | None]:
    """How each partition of ``role``'s data set is sampled, when ``sampling`` gives the
    sample's limit and the audit's seed: from the data set's key stream when every
    partition's first row is known (``rows``, or a single partition), else from a stream of
    its own (see :mod:`~epsstar.audit.engines.record_sample`)."""
    if sampling is None:
        return [None] * len(found.partitions)
    limit, seed = sampling
    stream = sample_seed(seed, role)
    if rows is None and len(found.partitions) == 1:
        rows = (0,)
    if rows is None:
        return [Sampled(limit, (*stream, 1 + i), 0) for i in range(len(found.partitions))]
    return [Sampled(limit, stream, int(at)) for at in np.cumsum((0, *rows[:-1]))]


def _tasks(
    spec: ModelSpec,
    data: Mapping[Role, DataSet],
    reads: Mapping[Role, TableRead],
    references: _References,
    how: tuple[
        tuple[SummaryPlans, dict[Role, tuple[int, ...]]] | None,
        dict[Role, tuple[int, ...]] | None,
        tuple[int, int] | None,
    ],
) -> list[_Task]:
    """One :func:`stream_partition` task per partition, the training data's first (each
    told how to summarise its partition when ``summarising`` gives the plans and every
    partition's rows, and how to sample it when ``sampling`` gives the limit and seed)."""
    summarising, rows, sampling = how
    tasks: list[_Task] = []
    for role, found in data.items():
        with_references = references.for_role(role)
        summaries: list[Summarised | None] = [None] * len(found.partitions)
        if summarising is not None:
            plans, counts = summarising
            starts = np.cumsum((0, *counts[role][:-1]))
            summaries = [
                Summarised(plans.for_role(role), plans.hash_rate, int(at)) for at in starts
            ]
        samples = _sampled(found, role, None if rows is None else rows[role], sampling)
        tasks += [
            (spec, part, found.storage_options, reads[role], with_references, summary, sample)
            for part, summary, sample in zip(found.partitions, summaries, samples, strict=True)
        ]
    return tasks


class _Collected:
    """The partitions' results as they arrive: progress told to a
    :class:`PartitionProgress`, each partition's summary merged into its side's at once
    (the partition kept without it), its rows checked against its footer's."""

    def __init__(self, tasks: list[_Task], progress: object) -> None:
        self.roles: list[Role] = [task[3].role for task in tasks]
        self.totals = {role: self.roles.count(role) for role in self.roles}
        self.done = dict.fromkeys(self.roles, 0)
        self.rows = dict.fromkeys(self.roles, 0)
        self.parts: dict[int, tuple[StreamedTable, str, FloatArray | None]] = {}
        self.summaries: dict[str, LossSummary] = {}
        self.samples: dict[int, RecordSample] = {}
        self.progress = progress if isinstance(progress, PartitionProgress) else None
        self.started = time.perf_counter()

    def _keep_sample(self, index: int, role: Role, sample: RecordSample) -> None:
        """Keep the partition's sample, and of the side's samples so far only the rows
        whose keys are among the ``limit`` smallest (the others cannot be in the join)."""
        self.samples[index] = sample
        mine = [i for i in self.samples if self.roles[i] == role]
        keys = np.concatenate([self.samples[i].keys for i in mine])
        if keys.size > sample.limit:
            largest = float(np.partition(keys, sample.limit - 1)[sample.limit - 1])
            for i in mine:
                if self.samples[i].keys.size and self.samples[i].keys.max() > largest:
                    self.samples[i] = self.samples[i].pruned(largest)

    def records(self) -> Records | None:
        """Both sides' samples joined (``None``: not sampled)."""
        if not self.samples:
            return None
        sides = [
            joined_sample([self.samples[i] for i in sorted(self.samples) if self.roles[i] == role])
            for role in ROLES
        ]
        return sampled_records(*sides)

    def __call__(self, outcome: TaskOutcome[_Streamed]) -> None:
        role = self.roles[outcome.index]
        self.done[role] += 1
        if outcome.value is not None:
            table, digest, log_odds, sample = outcome.value
            self.rows[role] += table.rows
            if sample is not None:
                self._keep_sample(outcome.index, role, sample)
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


def _refuse_same(sources: tuple[str, str], digests: Mapping[Role, str] | None = None) -> None:
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
    rows = [log_odds for _, _, log_odds in results if log_odds is not None]
    joined = np.hstack(rows) if len(rows) == len(results) else None
    table = join_tables([streamed for streamed, _, _ in results], role)
    if summary is not None:
        summary = dataclasses.replace(summary, sample=table.losses)
        table = dataclasses.replace(table, summary=summary)
    return table, dataset_digest(named), joined


def _check_rows(
    tasks: list[_Task], collected: _Collected, rows: dict[Role, tuple[int, ...]] | None
) -> None:
    """Refuse a partition that streamed other rows than its Parquet footer says, when the
    footers placed the partitions' rows (the positions that choose each record's halves,
    and the keys of its sample, would be wrong)."""
    if rows is None or all(task[5] is None and task[6] is None for task in tasks):
        return
    footers = [n for role in ("train", "population") for n in rows[role]]
    for index, expected in enumerate(footers):
        found = collected.parts[index][0].rows
        if found != expected:
            raise InvalidInputError(
                f"{tasks[index][1]}: a partition must stream the {expected:,} rows its "
                f"Parquet footer records. Found {found:,}."
            )


def _without_empty(
    data: dict[Role, DataSet],
) -> tuple[dict[Role, DataSet], dict[Role, tuple[int, ...]] | None]:
    """The data sets without the partitions whose Parquet footer records no row (writers of
    partitioned data sets leave such files), and every partition's rows when each side's
    footers can be read (``None`` otherwise). A side whose partitions are all empty keeps
    them, to be refused as empty when streamed."""
    rows = {role: partition_rows(found) for role, found in data.items()}
    if any(found is None for found in rows.values()):
        return data, None
    kept: dict[Role, DataSet] = {}
    known: dict[Role, tuple[int, ...]] = {}
    for role, found in data.items():
        counts = rows[role]
        assert counts is not None
        chosen = [i for i, n in enumerate(counts) if n > 0] or list(range(len(counts)))
        parts = tuple(found.partitions[i] for i in chosen)
        kept[role] = dataclasses.replace(found, partitions=parts)
        known[role] = tuple(counts[i] for i in chosen)
    return kept, known


def _summarising(
    rows: dict[Role, tuple[int, ...]] | None, seed: int | None
) -> tuple[SummaryPlans, dict[Role, tuple[int, ...]]] | None:
    """The summary plans and each partition's rows, when the audit summarises (``seed``
    given), a side is large enough and every partition's rows are in its Parquet footer."""
    if seed is None or rows is None:
        return None
    plans = SummaryPlans.for_rows(sum(rows["train"]), sum(rows["population"]), seed=seed)
    return None if plans is None else (plans, rows)


def _attack_inputs(
    sides: Mapping[Role, tuple[StreamedTable, str, FloatArray | None]],
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
        ReferenceModel.from_digests(spec.file.path, spec.file.loader or "", spec.digests)
        for spec in references.specs
    )
    confidences = ReferenceConfidences(train[1:], population[1:], models)
    return AttackInputs((train[0], population[0]), confidences)


def stream_on_dask(
    loaded: LoadedAuditModel,
    file: ModelFile,
    tables: Tables,
    engine: Engine,
    *,
    progress: object = None,
    reference_models: Sequence[Path] = (),
    summarise_seed: int | None = None,
    sample: tuple[int, int] | None = None,
) -> DaskStreams:
    """Stream the training and population data sets of ``tables`` on ``engine``'s cluster.

    ``progress``, if it is a :class:`PartitionProgress`, is told as partitions finish; the
    ``reference_models`` run over every partition too (``attack_inputs``). With
    ``summarise_seed`` (the audit's statistics can be computed from summaries), a side
    too large to hold whole is summarised on the workers
    (:mod:`epsstar.audit.engines.summaries`). With ``sample``, the limit of the blind
    baseline's records per side and the audit's seed, each side's records are sampled on
    the workers as the single process samples them (``records``).
    """
    from epsstar.audit.engines.dask_engine import dask_client, run_tasks

    sources = (tables.source("train"), tables.source("population"))
    _refuse_same(sources)
    options = tables.storage_options
    found = {role: find_partitions(tables.source(role), options) for role in ROLES}
    data, rows = _without_empty(found)
    # Each side's columns are read once (from its first partition, maybe over the network).
    columns = {role: _columns(found) for role, found in data.items()}
    reads = _reads(loaded.model, file.path, tables, columns, file.outputs_requested)
    references = _references(reference_models, tables, columns, file.trust)
    summarising = _summarising(rows, summarise_seed)
    how = (summarising, rows, sample)
    tasks = _tasks(model_spec(file, loaded.model), data, reads, references, how)
    collected = _Collected(tasks, progress)
    with dask_client(engine) as client:
        outcomes = run_tasks(
            client, stream_partition, tasks, collected, name="epsstar-partition", keep=False
        )
    failed = next((outcome for outcome in outcomes if outcome.error is not None), None)
    if failed is not None:
        where, error = tasks[failed.index][1], str(failed.error)
        raise InvalidInputError(error if error.startswith(where) else f"{where}: {error}")
    _check_rows(tasks, collected, rows)
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
    match = tables.match(loaded.model, "train", file.path, columns=columns["train"])
    return DaskStreams(
        train, population, match, digests, partitions, attack_inputs, collected.records()
    )
