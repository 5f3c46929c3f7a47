"""Audit one saved model: load it, stream both tables through it, measure the losses.

:func:`audit` composes the rooms of the audit layer, each usable on its own:

1. :meth:`~epsstar.audit.model.loading.ModelFile.load` resolves the loader plugin and loads
   the model file, with the class labels of its outputs;
2. an engine streams the training and then the population table through it in batches
   (:func:`epsstar.audit.engines.streaming.stream_table` in this process,
   :func:`epsstar.audit.engines.dask_audit.stream_on_dask` on a Dask cluster): per-record
   losses, accuracy and AUROC inputs, the row hashes of the data checks;
3. :func:`epsstar.audit.attacks.from_losses.audit_losses` turns the two loss arrays into
   Epsilon*, its empirical value, the held-out lower bound and the readings, with no I/O;
4. the attacks beyond the loss attack (:mod:`epsstar.audit.attacks.run`) and the slices
   (:mod:`epsstar.audit.attacks.slices`).

The typed :class:`~epsstar.audit.output.provenance.Provenance` (files and their SHA-256,
the loader, how the columns were matched, timings, the command line) is assembled here.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from epsstar import __version__
from epsstar.audit.attacks.from_losses import audit_losses
from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.audit.attacks.registry import needs_of
from epsstar.audit.attacks.run import with_attacks
from epsstar.audit.attacks.scoring import LOSS_ONLY, AttackSettings
from epsstar.audit.attacks.slices import SliceKeys, audit_slices, read_slice_keys
from epsstar.audit.data.checks import InputChecks, check_inputs, refuse_same_data
from epsstar.audit.data.column_match import ColumnMatch
from epsstar.audit.data.files import FileDigest, digests_of
from epsstar.audit.data.progress import Progress
from epsstar.audit.data.reading import Role, Tables
from epsstar.audit.data.records import Records, read_records
from epsstar.audit.data.summary_plans import SummaryPlans
from epsstar.audit.data.text_records import TextTables
from epsstar.audit.engines.one_pass import SharedReferences
from epsstar.audit.engines.record_sample import RecordSample, sample_seed, sampled_records
from epsstar.audit.engines.streaming import StreamedTable, stream_table, wants_auroc
from epsstar.audit.engines.summaries import can_summarise, losses_of, summarise_table
from epsstar.audit.inputs.served import ServedSource
from epsstar.audit.model.loading import LoadedAuditModel, ModelFile, ModelObject
from epsstar.audit.model.output_reading import OutputReading
from epsstar.audit.options import AuditOptions
from epsstar.audit.output.provenance import EngineRun, Provenance, Timings
from epsstar.audit.output.result import AuditResult
from epsstar.audit.premise.attribute import check_model_input
from epsstar.audit.premise.classifier import READ_ROWS, blind_log_odds
from epsstar.audit.premise.findings import PremiseInputs, PremiseKeys, premise_keys, with_premise
from epsstar.audit.premise.settings import DEFAULT_PREMISE, PremiseSettings
from epsstar.audit.premise.tracked_bound import tracked_bound
from epsstar.audit.text_run import TextRun, audit_text, check_text_settings
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.plumbing.files.digests import sha256_of
from epsstar.plumbing.runtime.threads import chosen_threads
from epsstar.statistics.utility import Utility

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.engines.dask_audit import PartitionProgress
    from epsstar.audit.engines.dask_engine import Engine

__all__ = ["AuditResult", "ModelFile", "ModelObject", "Tables", "TextTables", "audit"]

Step = Literal["load", "inference", "utility", "statistics"]
ROLES: tuple[Role, Role] = ("train", "population")


@dataclass(slots=True)
class _Clock:
    """When each step of an audit ended, for :class:`Timings`."""

    started: float = field(default_factory=time.perf_counter)
    ended: dict[Step, float] = field(default_factory=dict)

    def done(self, step: Step) -> None:
        self.ended[step] = time.perf_counter()

    def timings(self) -> Timings:
        at = self.ended
        return Timings(
            load=round(at["load"] - self.started, 3),
            inference=round(at["inference"] - at["load"], 3),
            statistics=round(at["statistics"] - at["utility"], 3),
            utility=round(at["utility"] - at["inference"], 3),
            total=round(at["statistics"] - self.started, 3),
        )


@dataclass(frozen=True, slots=True)
class _Run:
    """One audit's settings, as :func:`audit` was given them, checked."""

    model: ModelFile | ModelObject
    tables: Tables
    options: AuditOptions
    attack: AttackSettings
    engine: Engine | None
    #: Told as the rows are read: a :class:`Progress` in one process, a
    #: :class:`PartitionProgress` (as partitions finish) on a Dask cluster.
    progress: Progress | PartitionProgress | None
    command: str | None
    premise: PremiseSettings = DEFAULT_PREMISE

    @property
    def table_progress(self) -> Progress | None:
        return self.progress if isinstance(self.progress, Progress) else None

    @property
    def on_dask(self) -> bool:
        return self.engine is not None and self.engine.on_dask


@dataclass(frozen=True, slots=True)
class _Streamed:
    """Both tables as streamed, the column match, the data's digests, the engine record of
    the provenance (``None`` in one process) and, when the reference models ran where the
    tables were streamed, their log-odds and the target's."""

    train: StreamedTable
    population: StreamedTable
    match: ColumnMatch
    digests: dict[Role, str]
    engine: EngineRun | None = None
    attack_inputs: AttackInputs | None = None
    #: The blind baseline's records, kept while streaming (``None``: not kept).
    records: Records | None = None


def audit(
    model: str | os.PathLike[str] | ModelFile | ModelObject | object,
    tables: Tables | TextTables,
    options: AuditOptions | None = None,
    *,
    attack: AttackSettings = LOSS_ONLY,
    slice_by: str | None = None,
    engine: Engine | None = None,
    progress: Progress | PartitionProgress | None = None,
    command: str | None = None,
    premise: PremiseSettings = DEFAULT_PREMISE,
) -> AuditResult:
    """Audit a saved model against its training data and population data.

    ``model`` is the model file (a path, the URL of a served model, or a :class:`ModelFile`
    saying how to load it);
    ``tables`` what to read (:class:`Tables`: the two data sets, the label column, the
    columns, the loss); ``options`` how to estimate (:class:`AuditOptions`: δ, the method,
    an interval, the release gate, the confidence, the seed). ``attack`` chooses the
    membership tests (``result.attacks``, :mod:`.attacks.run`) and ``slice_by`` a column to
    audit each value of (``result.slices``, :mod:`.attacks.slices`). ``engine`` is where
    the tables are streamed (``None``: this process; with a ``dask`` engine the data may be
    partitioned data sets, for the same result on the same rows), ``progress`` is told as
    the rows are read, and ``command`` is recorded in the provenance. ``premise`` says what
    is read beyond the membership of records (:mod:`.premise`): the blind baseline (on by
    default), user-level Epsilon*, attribute inference and the most exposed records. The
    result is deterministic for a given seed.

    Columns reach the model by the names it records, else as ``tables.features`` names
    them, else by position, with a warning (:mod:`epsstar.audit.data.column_match`). One
    file (or two with the same content) as both data sets is refused. A single class,
    population rows also in the training data, or an ambiguous output reading raise a
    warning (``result.warnings``) that fails a gate (:mod:`epsstar.audit.data.checks`).

    With :class:`~epsstar.audit.data.text_records.TextTables`, ``model`` is a causal
    language model's folder audited on text records (:func:`epsstar.audit.text_run.audit_text`).

    ``model`` may also be a fitted model in memory (or a :class:`ModelObject` saying how to
    load it), taken by the loader that claims it, and ``tables`` may hold tables in memory
    (:class:`Tables`); messages then name the objects, and the provenance says what they
    are instead of naming files.
    """
    file = _model_of(model)
    on_dask = engine is not None and engine.on_dask
    _refuse_served_beyond_tables(file, on_dask, isinstance(tables, TextTables))
    if isinstance(tables, TextTables):
        if isinstance(file, ModelObject):
            raise InvalidInputError(
                f"a text audit reads a language model's folder; pass its path. Found a {file.path}."
            )
        return _audit_text(
            file, tables, options, attack, (slice_by, engine, progress), premise, command
        )
    try:
        return _audit_table(
            file, tables, options, attack, slice_by, engine, progress, command, premise
        )
    except InvalidInputError as error:
        if tables.staged is None:
            raise
        raise type(error)(tables.named(str(error))) from None


def _model_of(model: object) -> ModelFile | ModelObject:
    """``model`` as a record saying how to load it: a path is a file, any other object a
    model in memory."""
    if isinstance(model, (ModelFile, ModelObject)):
        return model
    if isinstance(model, (str, os.PathLike)):
        return ModelFile.of(model)
    return ModelObject(model)


def _audit_table(
    file: ModelFile | ModelObject,
    tables: Tables,
    options: AuditOptions | None,
    attack: AttackSettings,
    slice_by: str | None,
    engine: Engine | None,
    progress: Progress | PartitionProgress | None,
    command: str | None,
    premise: PremiseSettings,
) -> AuditResult:
    """:func:`audit` of a table."""
    on_dask = engine is not None and engine.on_dask
    if on_dask and (isinstance(file, ModelObject) or tables.staged is not None):
        raise InvalidInputError(
            "the dask engine's workers read the model and the data from their files; save "
            "the objects in memory and pass their paths, or use the single-process engine. "
            "Found an object in memory."
        )
    _refuse_text_attacks(attack)
    _refuse_every_record_on_dask(attack, on_dask)
    run = _Run(
        file,
        tables,
        AuditOptions() if options is None else options,
        attack,
        engine,
        progress if on_dask else _checked_progress(progress),
        command,
        premise,
    )
    if attack.needs_blind and not premise.blind:
        raise InvalidInputError(
            f"the beyond-baseline attack needs the blind baseline. Found it skipped: "
            f"{premise.skip_blind_baseline!r}."
        )
    file.located()
    if not run.on_dask:
        for role in ("train", "population"):
            _existing(role, tables.path(role))
    _refuse_separator_on_dask(tables, run.on_dask)
    digests = {} if run.on_dask else _distinct_data(tables)
    keys = _slice_keys(slice_by, tables, run.on_dask)
    users = premise_keys(premise, tables, on_dask=run.on_dask, method=run.options.headline_method)
    clock = _Clock()
    loaded = file.load()
    clock.done("load")
    streamed = _stream_on_dask(loaded, run) if run.on_dask else _stream(loaded, run, digests)
    return _finish(loaded, run, streamed, clock, (keys, users))


def _audit_text(
    file: ModelFile,
    tables: TextTables,
    options: AuditOptions | None,
    attack: AttackSettings,
    engine_settings: tuple[str | None, Engine | None, object],
    premise: PremiseSettings,
    command: str | None,
) -> AuditResult:
    """A text audit (:mod:`epsstar.audit.text_run`), in this process or on a Dask cluster,
    without slices."""
    slice_by, engine, progress = engine_settings
    on_dask = engine is not None and engine.on_dask
    check_text_settings(
        slice_by=slice_by,
        group_by=premise.group_by,
        attribute=premise.attribute,
        skip_blind_baseline=premise.skip_blind_baseline,
    )
    run = TextRun(
        file,
        tables,
        AuditOptions() if options is None else options,
        attack,
        tables.record_text,
        progress if on_dask else _checked_progress(progress),
        command,
        premise.top_records,
        engine,
    )
    return audit_text(run)


def _refuse_served_beyond_tables(file: ModelFile | ModelObject, on_dask: bool, text: bool) -> None:
    """A served model is audited on tables, in this process (its server does the work)."""
    if isinstance(file, ModelFile) and file.url is not None and (on_dask or text):
        what = "the dask engine" if on_dask else "text records"
        raise InvalidInputError(
            f"a served model is audited on tables with the single-process engine; {what} "
            f"need a model file or folder. Found the URL {file.shown}."
        )


def _refuse_every_record_on_dask(attack: AttackSettings, on_dask: bool) -> None:
    """The workers send back a sample of the records, not every record some attacks read."""
    if on_dask and (attack.needs_records or attack.needs_blind):
        name = next(n for n in attack.attacks if needs_of([n]) & {"records", "blind"})
        raise InvalidInputError(
            f"the {name} attack reads every record, which the dask engine's workers keep "
            f"(they send back a sample for the blind baseline); use the single-process "
            f"engine. Found --attack {' '.join(attack.attacks)} with the dask engine."
        )


def _refuse_text_attacks(attack: AttackSettings) -> None:
    """Refuse the attacks on text records in an audit of a table."""
    if attack.needs_text:
        text = next(name for name in attack.attacks if "text" in needs_of([name]))
        raise InvalidInputError(
            f"the {text} attack scores text records read by a language model; pass "
            f"--text-column (text_column=). Found a table with a label column."
        )


def _existing(role: str, path: Path) -> None:
    """``path`` checked to be a file."""
    if role == "model" and path.is_dir():
        raise InputFileError(
            f"model: a model folder (a language model's) is audited on text records; pass "
            f"--text-column (TextTables). Found the folder {str(path)!r}."
        )
    if path.is_dir():
        raise InputFileError(f"{role}: must be a file, not a directory. Found {str(path)!r}.")
    if not path.is_file():
        raise InputFileError(f"{role}: no such file. Found {str(path)!r}.")


def _checked_progress(progress: object) -> Progress | None:
    if progress is not None and not isinstance(progress, Progress):
        raise InvalidInputError(
            f"progress must be None or have start(role, path) and advance(rows). "
            f"Found {progress!r}."
        )
    return progress


def _distinct_data(tables: Tables) -> dict[Role, str]:
    """The SHA-256 of the training and population files, refused when they are one file
    or have the same content."""
    paths: dict[Role, Path] = {role: tables.path(role) for role in ROLES}
    digests: dict[Role, str] = {role: sha256_of(path) for role, path in paths.items()}
    refuse_same_data(paths["train"], paths["population"], digests)
    return digests


def _refuse_separator_on_dask(tables: Tables, on_dask: bool) -> None:
    """The Dask engine reads comma-separated CSV partitions only."""
    if on_dask and tables.csv_separator != ",":
        raise InvalidInputError(
            f"csv_separator works with the single-process engine only. Found "
            f"{tables.csv_separator!r} with the dask engine."
        )


def _slice_keys(column: str | None, tables: Tables, on_dask: bool) -> SliceKeys | None:
    """The slices of ``column`` (read now, so that a bad column fails before any model
    runs), or ``None`` without one."""
    if column is None:
        return None
    if on_dask:
        raise InvalidInputError(
            f"slice_by works with the single-process engine only. Found slice_by {column!r} "
            f"with the dask engine."
        )
    train, population = tables.path("train"), tables.path("population")
    return read_slice_keys(train, population, column, separator=tables.csv_separator)


def _stream(loaded: LoadedAuditModel, run: _Run, digests: dict[Role, str]) -> _Streamed:
    """The training table, then the population table, encoded with the same label map; the
    reference models of the attacks scored on the same reads (:mod:`.engines.one_pass`)."""
    tables, path = run.tables, run.model.path
    requested = run.model.outputs_requested
    matches = {role: tables.match(loaded.model, role, path) for role in ("train", "population")}
    _refuse_guess(matches["train"], run)
    if run.premise.attribute is not None:
        check_model_input(run.premise.attribute, matches["train"].file_columns)
    samples = _samples(run)
    shared = _shared_references(loaded, run)
    reads = {
        role: tables.read(role, matches[role], outputs_requested=requested)
        for role in ("train", "population")
    }
    riders = None if shared is None else [shared.scores(reads[r], matches[r]) for r in reads]
    train = stream_table(
        loaded.model,
        reads["train"],
        classes=loaded.classes,
        progress=run.table_progress,
        sample=None if samples is None else samples[0],
        scorer=None if riders is None else riders[0],
    )
    population = stream_table(
        loaded.model,
        reads["population"],
        label_map=train.label_map,
        progress=run.table_progress,
        sample=None if samples is None else samples[1],
        scorer=None if riders is None else riders[1],
    )
    records = None if samples is None else sampled_records(*samples)
    inputs = None
    if shared is not None and riders is not None:
        streamed = ((riders[0], train.losses), (riders[1], population.losses))
        inputs = shared.inputs(streamed, tables, train.label_map, run.table_progress)
    return _Streamed(
        train, population, matches["train"], digests, attack_inputs=inputs, records=records
    )


def _shared_references(loaded: LoadedAuditModel, run: _Run) -> SharedReferences | None:
    """The attacks' reference models, loaded to ride on the target's reads (``None``: no
    attack needs them)."""
    attack = run.attack
    if not (attack.needs_log_odds and attack.reference_models):
        return None
    return SharedReferences.load(
        loaded.model,
        attack.reference_models,
        run.tables,
        trust=run.model.trust,
        device=run.model.device,
    )


def _needs_every_record(run: _Run) -> bool:
    """Whether an attack or the attribute inference reads every record."""
    attack = run.attack
    return attack.needs_records or attack.needs_blind or run.premise.attribute is not None


def _samples(run: _Run) -> tuple[RecordSample, RecordSample] | None:
    """The blind baseline's records, kept as the tables are streamed (``None``: not
    needed, or every record is read after the streaming)."""
    if not run.premise.blind or _needs_every_record(run):
        return None
    seed = run.options.seed
    return RecordSample(READ_ROWS, sample_seed(seed, "train")), RecordSample(
        READ_ROWS, sample_seed(seed, "population")
    )


def _stream_on_dask(loaded: LoadedAuditModel, run: _Run) -> _Streamed:
    """Both data sets streamed on a Dask cluster, the reference models of the attacks too."""
    from epsstar.audit.engines.dask_audit import stream_on_dask

    assert run.engine is not None
    assert isinstance(run.model, ModelFile)  # objects are refused on the cluster (audit())
    options, attack = run.options, run.attack
    needs = attack.needs_log_odds
    summarises = can_summarise(options.headline_method, options.interval, attack.attacks, False)
    streams = stream_on_dask(
        loaded,
        run.model,
        run.tables,
        run.engine,
        progress=run.progress,
        reference_models=attack.reference_models if needs else (),
        summarise_seed=options.seed if summarises else None,
        sample=None if _samples(run) is None else (READ_ROWS, options.seed),
    )
    ran_on = EngineRun(run.engine.name, run.engine.scheduler, streams.partitions)
    return _Streamed(
        streams.train,
        streams.population,
        streams.match,
        streams.digests,
        ran_on,
        streams.attack_inputs,
        streams.records,
    )


def _finish(
    loaded: LoadedAuditModel,
    run: _Run,
    streamed: _Streamed,
    clock: _Clock,
    keyed: tuple[SliceKeys | None, PremiseKeys],
) -> AuditResult:
    """The audit of the streamed tables: data checks, utility, statistics, then the attacks,
    the slices and the premise's readings."""
    keys, users = keyed
    _refuse_guess(streamed.match, run)
    streamed, plans = _summarised(streamed, run, keys is not None)
    stated = run.tables.columns_by_position
    checks = check_inputs(
        (streamed.train.scan, streamed.population.scan),
        streamed.train.label_map.classes,
        None if stated else streamed.match.position_warning(run.model.path),
        _output_reading(loaded, run.model.outputs_requested),
        tuple(getattr(loaded.model, "input_notes", ())),
    )
    clock.done("inference")  # streaming, summarising and the checks of the data
    utility = _utility(streamed.train, streamed.population)
    clock.done("utility")
    provenance = _provenance(loaded, run, streamed, checks, plans)
    losses = (losses_of(streamed.train), losses_of(streamed.population))
    result = audit_losses(*losses, utility=utility, options=run.options, provenance=provenance)
    clock.done("statistics")
    result = _with_checks(
        result, checks, gate=run.options.max_epsilon is not None, named=run.tables.named
    )
    provenance = dataclasses.replace(provenance, seconds=clock.timings())
    declared = getattr(loaded.model, "declared_privacy", None)
    result = dataclasses.replace(result, provenance=provenance, declared_privacy=declared)
    started = time.perf_counter()
    premise = _premise_inputs(loaded, run, streamed, users)
    premise_seconds = time.perf_counter() - started
    started = time.perf_counter()
    result = _attacked(result, run, streamed, premise)
    if any(attack.name != "loss" for attack in result.attacks):
        result = _timed(result, "attacks", time.perf_counter() - started)
    if keys is not None:
        started = time.perf_counter()
        result = dataclasses.replace(result, slices=audit_slices(result, keys, run.options))
        result = _timed(result, "slices", time.perf_counter() - started)
    started = time.perf_counter()
    result = with_premise(result, premise, run.options)
    return _timed(result, "premise", premise_seconds + time.perf_counter() - started)


def _refuse_guess(match: ColumnMatch, run: _Run) -> None:
    """A release gate on columns matched by position is refused unless the order is stated."""
    gate = run.options.max_epsilon is not None
    match.refuse_guess(run.model.path, gate=gate, by_position=run.tables.columns_by_position)


def _premise_inputs(
    loaded: LoadedAuditModel, run: _Run, streamed: _Streamed, users: PremiseKeys
) -> PremiseInputs:
    """What the premise's readings and the attacks that read the records need: the records
    (read when one of them needs them) and, unless skipped, the blind classifier's scores."""
    settings = run.premise
    skipped = settings.skip_blind_baseline
    every = _needs_every_record(run)
    records = streamed.records
    if records is None and (skipped is None or every) and not run.on_dask:
        records = read_records(
            run.tables,
            streamed.match.file_columns,
            limit=None if every else READ_ROWS,
            seed=run.options.seed,
            rows=(streamed.train.rows, streamed.population.rows),
        )
    blind = None
    if skipped is None and records is not None:
        blind = blind_log_odds(records, folds=settings.folds, seed=run.options.seed)
    losses = None
    if streamed.train.summary is None and streamed.population.summary is None:
        losses = (streamed.train.losses, streamed.population.losses)
    return PremiseInputs(
        settings=settings,
        skipped=skipped,
        records=records,
        blind=blind,
        losses=losses,
        keys=users,
        model=(loaded.model, run.tables.read("train", streamed.match), streamed.train.label_map),
        attribute_bound=None
        if users.attribute is None
        or isinstance(run.model, ModelObject)
        or run.model.url is not None
        else tracked_bound(run.model.path, users.attribute.column),
    )


def _timed(
    result: AuditResult, step: Literal["attacks", "slices", "premise"], seconds: float
) -> AuditResult:
    """``result`` with the seconds of a step after the statistics in its provenance."""
    provenance = result.provenance
    if provenance is None or provenance.seconds is None:
        return result
    timed = dataclasses.replace(provenance, seconds=provenance.seconds.with_step(step, seconds))
    return dataclasses.replace(result, provenance=timed)


def _summarised(
    streamed: _Streamed, run: _Run, sliced: bool
) -> tuple[_Streamed, SummaryPlans | None]:
    """Both tables with the sides too large to hold whole summarised, as a Dask cluster's
    workers summarise them (:mod:`epsstar.audit.engines.summaries`), and the plans (``None``:
    every loss kept)."""
    options = run.options
    if not can_summarise(options.headline_method, options.interval, run.attack.attacks, sliced):
        return streamed, None
    plans = SummaryPlans.for_rows(streamed.train.rows, streamed.population.rows, seed=options.seed)
    if plans is None:
        return streamed, None
    train, population = (
        table
        if table.summary is not None or table.scan.hash_rate < 1
        else summarise_table(table, plans.for_role(role), plans.hash_rate)
        for role, table in (("train", streamed.train), ("population", streamed.population))
    )
    return dataclasses.replace(streamed, train=train, population=population), plans


def _provenance(
    loaded: LoadedAuditModel,
    run: _Run,
    streamed: _Streamed,
    checks: InputChecks,
    plans: SummaryPlans | None,
) -> Provenance:
    """What was audited and how, for the JSON and the report (timings are added later)."""
    tables = run.tables
    served: ServedSource | None = getattr(loaded.model, "served", None)
    model, model_files = _model_record(loaded, run.model, served)
    return Provenance(
        model=model,
        model_files=model_files,
        loader=loaded.loader,
        output_kind=loaded.model.output_kind,
        loss=tables.loss,
        label_column=tables.label_column,
        features=None if tables.features is None else tuple(tables.features),
        columns=streamed.match,
        input_shape=None if tables.input_shape is None else tuple(tables.input_shape),
        classes=tuple(str(c) for c in streamed.train.label_map.classes),
        classes_from=loaded.classes_from,
        train=tables.described("train"),
        population=tables.described("population"),
        train_sha256=streamed.digests["train"],
        population_sha256=streamed.digests["population"],
        shared_rows=checks.shared_rows,
        n_train=streamed.train.rows,
        n_population=streamed.population.rows,
        seed=run.options.seed,
        confidence=run.options.confidence,
        epsstar_version=__version__,
        python=sys.version.split()[0],
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        command=run.command,
        engine=streamed.engine,
        summaries=plans,
        model_folder=loaded.folder,
        device=loaded.device,
        threads=None if run.on_dask else chosen_threads(),
        served=served,
    )


def _model_record(
    loaded: LoadedAuditModel, model: ModelFile | ModelObject, served: ServedSource | None
) -> tuple[str, tuple[FileDigest, ...]]:
    """How the provenance names the model and the digests of what was read: the files; for
    a served model its URL and none; for a model in memory its type and the digest of its
    serialisation (``not hashed`` when it has none)."""
    identity = loaded.identity
    if served is not None:
        return served.url, ()
    if identity is None:
        return os.fspath(loaded.file or model.path), digests_of(loaded.files(model.path))
    described = identity.described
    return described, (FileDigest(described, identity.sha256 or "not hashed"),)


def _with_checks(
    result: AuditResult, checks: InputChecks, *, gate: bool, named: Callable[[str], str]
) -> AuditResult:
    """``result`` with the checks' warnings raised and kept (with a gate, the gate's failure
    when one of them can hide a leak), and the output reading; ``named`` words each line
    (naming tables in memory instead of their staged files)."""
    said, blocked = checks.lines(gate=gate)
    said = [(category, named(line)) for category, line in said]
    level = _callers_level()
    for category, line in said:
        warnings.warn(category(line), stacklevel=level)
    return dataclasses.replace(
        result,
        warnings=tuple(line for _, line in said),
        gate_blocked=blocked,
        output_reading=checks.output_reading,
    )


def _callers_level() -> int:
    """The ``stacklevel`` that points a warning raised by this function's caller at the first
    frame outside epsstar: the line of the user's code that called the audit, through
    however many of epsstar's functions it came."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(
        package
    ):
        frame, level = frame.f_back, level + 1
    return level


def _output_reading(loaded: LoadedAuditModel, requested: bool) -> OutputReading:
    kind = loaded.model.output_kind
    if requested:
        return OutputReading(kind, "requested", "as the outputs option says")
    detected = getattr(loaded.model, "output_reading", None)
    if isinstance(detected, OutputReading) and detected.kind == kind:
        return detected
    return OutputReading(kind, "loader", f"as the {loaded.loader.name} loader chose")


def _attacked(
    result: AuditResult, run: _Run, streamed: _Streamed, premise: PremiseInputs
) -> AuditResult:
    """``result`` with the records of the membership tests (:mod:`.attacks.run`). The
    log-odds of the attacks that take reference models were read by the engine that
    streamed the tables, beside the target's (an attack that needs log-odds needs reference
    models: :func:`~epsstar.audit.attacks.scoring.check_attacks`)."""
    inputs, attack = streamed.attack_inputs, run.attack
    assert inputs is not None or not attack.needs_log_odds
    if attack.needs_records or attack.needs_blind:
        inputs = dataclasses.replace(
            AttackInputs() if inputs is None else inputs,
            losses=premise.losses,
            records=premise.records,
            blind=None
            if premise.blind is None
            else (premise.blind.train, premise.blind.population),
        )
    return with_attacks(result, attack, inputs, run.options)


def _utility(train: StreamedTable, population: StreamedTable) -> dict[str, Utility]:
    """Accuracy per table, and AUROC where :func:`wants_auroc` says."""
    return {
        "population": population.utility(),
        "train": train.utility(with_auroc=wants_auroc("train", train.n_outputs)),
    }
