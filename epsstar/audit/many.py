"""Audit many models from a manifest and summarise them per strategy.

A manifest lists one model per row (CSV) or per ``[[models]]`` table (TOML):
``model``, ``train`` (or ``train_data``), ``population`` (or
``population_data``), ``label_column``, ``strategy`` and ``repeat``, optionally
``features`` and ``class_labels`` (comma-separated), ``loader`` and ``outputs``; a language
model's folder has a ``text_column`` instead of the ``label_column``. In TOML, top-level
keys are defaults for every model. Any other column is a hyper-parameter of the
strategy and is carried into the results (``epsstar train``'s sweep manifest is
one such file). Relative paths are relative to the manifest's folder.

Models are audited in parallel processes, or one task per model on a Dask cluster
(:mod:`epsstar.audit.engines.dask_engine`), each into a frozen :class:`ModelAudit`;
a model that cannot be audited (or whose worker died) is reported with its error
and does not lose the others' results. Per strategy,
the summary gives min/mean/max Epsilon* and the mechanism-level bound over its
repeats, log mean exp(ε*) (Theorem 2 of Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine
Learning Models").
"""

from __future__ import annotations

import functools
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np

from epsstar.audit.data.configs.manifest import (
    CELL,
    PARAMS,
    HyperParameters,
    ManifestEntry,
    read_manifest,
)
from epsstar.audit.data.reading import DEFAULT_BATCH_SIZE, Tables
from epsstar.audit.data.text_records import TextTables
from epsstar.audit.engines.pool import run_in_processes
from epsstar.audit.model.loading import ModelFile
from epsstar.audit.options import AuditOptions
from epsstar.audit.output.result import SCHEMA_VERSION
from epsstar.exceptions import EpsstarError, InputFileError
from epsstar.plumbing.files.schema import Where
from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.plumbing.records.json_types import JsonValue
from epsstar.plumbing.runtime.threads import choose_threads, use_threads
from epsstar.statistics._validation import check_positive_int
from epsstar.statistics.bounds.from_counts import mechanism_epsilon
from epsstar.statistics.names import LossName

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.engines.dask_engine import Engine, TaskOutcome
    from epsstar.audit.output.result import AuditResult

__all__ = [
    "FleetSettings",
    "ManifestEntry",
    "ModelAudit",
    "StrategySummary",
    "audit_many",
    "read_manifest",
    "summarise",
]


#: The rule of a model's optional keys: written only when they exist.
_OPTIONAL = json_rule(omit_if_none=True)


@dataclass(frozen=True, slots=True)
class ModelAudit(JsonRecord):
    """One manifest entry and what became of it: a result, or the error that stopped it.

    ``warnings`` are those the audit raised; ``report`` is the HTML report written for it.
    A report that could not be written makes the model failed (``error``) while its
    ``result`` is kept. ``worker`` is the address of the Dask worker that audited it
    (``None`` on the single-process engine). ``to_dict()`` is its record in
    ``epsstar audit-many --json``'s ``models``: keys only for what exists.
    """

    entry: ManifestEntry
    result: AuditResult | None = field(default=None, metadata=_OPTIONAL)
    warnings: tuple[str, ...] = field(default=(), metadata=json_rule(skip=True))
    report: Path | None = field(default=None, metadata=_OPTIONAL)
    error: str | None = field(default=None, metadata=_OPTIONAL)
    worker: str | None = field(default=None, metadata=_OPTIONAL)

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def epsilon_star(self) -> float | None:
        return None if self.result is None else self.result.epsilon_star

    @json_property(name="warnings", after="warnings", omit_if_none=True)
    def result_warnings(self) -> tuple[str, ...] | None:
        """The audit's warnings, written with its result."""
        return None if self.result is None else self.warnings


@dataclass(frozen=True, slots=True)
class StrategySummary(JsonRecord):
    """Epsilon* over the audited repeats of one strategy."""

    strategy: str
    n_models: int
    n_failed: int
    epsilon_min: float | None = field(metadata=json_rule(name="epsilon_star_min"))
    epsilon_mean: float | None = field(metadata=json_rule(name="epsilon_star_mean"))
    epsilon_max: float | None = field(metadata=json_rule(name="epsilon_star_max"))
    mechanism_epsilon: float | None
    params: Mapping[str, Any]


def above_gate(records: Iterable[ModelAudit]) -> list[ModelAudit]:
    """The audited models whose result fails the gate."""
    return [r for r in records if r.result is not None and r.result.passed is False]


@dataclass(frozen=True, slots=True)
class FleetDocument(JsonRecord):
    """The ``--json`` document of ``epsstar audit-many``: the manifest and the gate it was
    audited under, the engine, the totals, each strategy's summary and each model's audit."""

    json_constants: ClassVar[Mapping[str, JsonValue]] = {"schema_version": SCHEMA_VERSION}

    manifest: str
    max_epsilon: float | None
    gate: str
    engine: Engine
    strategies: tuple[StrategySummary, ...]
    models: tuple[ModelAudit, ...]

    @json_property(after="engine")
    def n_models(self) -> int:
        return len(self.models)

    @json_property(after="engine")
    def n_failed(self) -> int:
        return sum(1 for model in self.models if model.failed)

    @json_property(after="engine")
    def n_above_gate(self) -> int:
        return len(above_gate(self.models))


class _Outcome(NamedTuple):
    strategy: str
    params: HyperParameters
    epsilon: float | None
    failed: bool


def _outcome(record: ModelAudit | Mapping[str, JsonValue]) -> _Outcome:
    if isinstance(record, ModelAudit):
        entry = record.entry
        return _Outcome(entry.strategy, entry.params, record.epsilon_star, record.failed)
    # A ``models`` record of an ``audit-many --json`` file, as read from disk.
    where = Where("audit-many record")
    entry_dict, result = record["entry"], record.get("result")
    if not isinstance(entry_dict, dict):
        raise where.at("entry").error("a table", entry_dict)
    epsilon: float | None = None
    if result:
        value = result.get("epsilon_star") if isinstance(result, dict) else None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise where.at("result").at("epsilon_star").error("a number", value)
        epsilon = float(value)
    params = PARAMS.check(entry_dict.get("params") or {}, where.at("entry").at("params"))
    return _Outcome(
        str(entry_dict["strategy"]),
        params.extras(CELL),
        epsilon,
        bool(record.get("error")),
    )


def summarise(records: Iterable[ModelAudit | Mapping[str, JsonValue]]) -> list[StrategySummary]:
    """Per-strategy statistics of audit records (in first-seen strategy order).

    ``records`` are :func:`audit_many`'s, or the ``models`` of ``audit-many --json``
    files read back from disk (as ``epsstar landscape`` reads them).
    """
    groups: dict[str, list[_Outcome]] = {}
    for record in records:
        outcome = _outcome(record)
        groups.setdefault(outcome.strategy, []).append(outcome)
    summaries = []
    for strategy, members in groups.items():
        values = [m.epsilon for m in members if m.epsilon is not None]
        summaries.append(
            StrategySummary(
                strategy=strategy,
                n_models=len(members),
                n_failed=sum(1 for m in members if m.failed),
                epsilon_min=min(values) if values else None,
                epsilon_mean=float(np.mean(values)) if values else None,
                epsilon_max=max(values) if values else None,
                mechanism_epsilon=mechanism_epsilon(values) if values else None,
                params={k: v for k, v in members[0].params.items() if k != "seed"},
            )
        )
    return summaries


def _report_name(entry: ManifestEntry) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in entry.strategy)
    return f"{safe}-{entry.repeat}.html"


#: Writes one model's report: ``(result, path) -> path written``. It must be a
#: module-level function, since it travels to worker processes by reference.
ReportWriter = Callable[["AuditResult", Path], Path]


def _message(error: Exception) -> str:
    if isinstance(error, EpsstarError):
        return str(error)
    return f"unexpected {type(error).__name__}: {error}"


def _without_losses(result: AuditResult) -> AuditResult:
    return replace(result, train_losses=np.empty(0), population_losses=np.empty(0))


@dataclass(frozen=True, slots=True)
class FleetSettings:
    """What every model of a manifest is audited with: the statistical options, the loss,
    the rows per model call, and whether model files that can run code may be loaded (each
    entry gives its own model, data, columns, loader and output reading)."""

    options: AuditOptions = field(default_factory=AuditOptions)
    loss: LossName = "logit"
    batch_size: int = DEFAULT_BATCH_SIZE
    trust: bool = False
    #: The data's column order is each model's when it records no names (see
    #: :class:`~epsstar.audit.data.reading.Tables`).
    columns_by_position: bool = False
    #: The command that ran the audits, recorded in each result's provenance (None: the
    #: Python API).
    command: str | None = None
    #: What separates the fields of the CSV data files (see
    #: :class:`~epsstar.audit.data.reading.Tables`).
    csv_separator: str = ","
    #: The limit of each model named here, by ``strategy-repeat`` (from a reviewed limits
    #: file, :mod:`epsstar.audit.data.configs.limits`); the others keep ``options``'.
    limits_by_model: tuple[tuple[str, float | None], ...] = ()

    def audit_options(self, entry: ManifestEntry) -> AuditOptions:
        """The options of the audit of ``entry``: ``options`` with its own limit, if any."""
        name = f"{entry.strategy}-{entry.repeat}"
        for model, limit in self.limits_by_model:
            if model == name:
                return replace(self.options, max_epsilon=limit)
        return self.options

    def model(self, entry: ManifestEntry) -> ModelFile:
        """How the model of ``entry`` is loaded."""
        return ModelFile(
            entry.model, entry.loader, entry.outputs, self.trust, classes=entry.class_labels
        )

    def tables(self, entry: ManifestEntry) -> Tables | TextTables:
        """What the audit of ``entry`` reads: a classifier's tables, or a language model's
        text records (scored the default number of records per model call,
        :data:`~epsstar.audit.data.text_records.DEFAULT_TEXT_BATCH`)."""
        if entry.label_column is None:
            return TextTables(entry.train, entry.population, entry.text_column)
        return Tables(
            entry.train,
            entry.population,
            entry.label_column,
            features=entry.features,
            batch_size=self.batch_size,
            loss=self.loss,
            columns_by_position=self.columns_by_position,
            csv_separator=self.csv_separator,
        )


def _audit_one(
    entry: ManifestEntry,
    settings: FleetSettings,
    report_dir: Path | None = None,
    write_report: ReportWriter | None = None,
    keep_losses: bool = False,
) -> ModelAudit:
    """Worker: audit one entry (and write its report); errors become a message."""
    import warnings

    from epsstar.audit.run import audit

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = audit(
                settings.model(entry),
                settings.tables(entry),
                settings.audit_options(entry),
                command=settings.command,
            )
    except Exception as error:  # one broken model must not stop the others
        return ModelAudit(entry, error=_message(error))
    audited = ModelAudit(
        entry,
        result if keep_losses else _without_losses(result),
        warnings=tuple(str(warning.message) for warning in caught),
    )
    if report_dir is None or write_report is None:
        return audited
    try:
        return replace(audited, report=Path(write_report(result, report_dir / _report_name(entry))))
    except Exception as error:  # the audit stands; the model counts as failed
        return replace(audited, error=_message(error))


#: One audit at a time per worker process: an audit records its warnings with
#: ``warnings.catch_warnings``, which is process-wide, so two threads of one worker would
#: mix their models' warnings.
_ONE_AUDIT = threading.Lock()


def _audit_remote(
    entry: ManifestEntry,
    settings: FleetSettings,
    with_report: bool,
    write_report: ReportWriter | None,
    keep_losses: bool,
) -> tuple[ModelAudit, bytes | None]:
    """Dask task: audit one entry; its report travels back as bytes (no shared output
    folder is needed), for the client to write."""
    with _ONE_AUDIT, tempfile.TemporaryDirectory(prefix="epsstar-") as scratch:
        folder = Path(scratch) if with_report else None
        record = _audit_one(entry, settings, folder, write_report, keep_losses)
        html = None if record.report is None else record.report.read_bytes()
    return replace(record, report=None), html


def _audit_on_dask(
    entries: Sequence[ManifestEntry],
    engine: Engine,
    folder: Path | None,
    write_report: ReportWriter | None,
    keep_losses: bool,
    settings: FleetSettings,
    on_done: Callable[[ModelAudit], None] | None,
) -> list[ModelAudit]:
    """One Dask task per entry; each record names the worker that ran it."""
    from epsstar.audit.engines.dask_engine import dask_client, run_tasks
    from epsstar.plumbing.files.staging import atomic_write_bytes

    with_report = folder is not None and write_report is not None
    tasks = [(entry, settings, with_report, write_report, keep_losses) for entry in entries]
    records: list[ModelAudit | None] = [None] * len(entries)

    def finished(outcome: TaskOutcome[tuple[ModelAudit, bytes | None]]) -> None:
        entry = entries[outcome.index]
        if outcome.value is None:
            record = ModelAudit(entry, error=outcome.error, worker=outcome.worker)
        else:
            record, html = outcome.value
            record = replace(record, entry=entry, worker=outcome.worker)
            if html is not None and folder is not None:
                path = folder / _report_name(entry)
                try:
                    atomic_write_bytes(path, html)
                    record = replace(record, report=path)
                except OSError as error:
                    record = replace(
                        record, error=f"cannot write the report {str(path)!r}: {error}"
                    )
        records[outcome.index] = record
        if on_done:
            on_done(record)

    with dask_client(engine) as client:
        run_tasks(client, _audit_remote, tasks, finished, name="epsstar-audit")
    return [record for record in records if record is not None]


def _report_folder(report_dir: str | Path | None) -> Path | None:
    if report_dir is None:
        return None
    folder = Path(report_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputFileError(f"cannot create the report folder {str(folder)!r}: {error}.") from None
    return folder


def audit_many(
    entries: Sequence[ManifestEntry],
    settings: FleetSettings | None = None,
    *,
    jobs: int = 2,
    on_done: Callable[[ModelAudit], None] | None = None,
    report_dir: str | Path | None = None,
    write_report: ReportWriter | None = None,
    keep_losses: bool = False,
    engine: Engine | None = None,
) -> list[ModelAudit]:
    """Audit every entry with ``settings`` (:func:`epsstar.audit.audit` per entry), in
    manifest order.

    Entries are audited in ``jobs`` processes (in this one for ``jobs=1``);
    ``on_done`` is called in this process with each record as it finishes. With
    ``report_dir`` and ``write_report``, each audited model's report is written
    there by ``write_report`` (named ``<strategy>-<repeat>.html``). The results
    leave out the per-record losses, so that a long manifest does not hold every
    model's losses in memory; ``keep_losses=True`` keeps them (for
    :meth:`AuditResult.curves` or a report drawn later). With a ``dask`` ``engine``
    each entry is one task on its cluster (``jobs`` is then unused) and each record names
    the worker that audited it.
    """
    jobs = check_positive_int("jobs", jobs)
    settings = FleetSettings() if settings is None else settings
    folder = _report_folder(report_dir)
    if engine is not None and engine.on_dask:
        return _audit_on_dask(entries, engine, folder, write_report, keep_losses, settings, on_done)
    arguments = [(entry, settings, folder, write_report, keep_losses) for entry in entries]

    def done(_: int, record: ModelAudit) -> None:
        if on_done:
            on_done(record)

    # each process's torch and onnxruntime threads: the idle cores shared among the jobs
    threads = functools.partial(use_threads, choose_threads(jobs))
    return run_in_processes(_audit_one, arguments, jobs=jobs, on_done=done, initializer=threads)
