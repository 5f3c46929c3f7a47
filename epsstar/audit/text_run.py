"""Audit a causal language model on text records: :func:`audit_text`.

The text counterpart of :func:`epsstar.audit.run.audit` (which hands text audits here), in
the same steps:

1. both data sets are scanned (:func:`~epsstar.audit.data.text_records.scan_text`): every
   record text and not empty, and the population records also found verbatim among the
   training records counted (a warning that fails the gate above 1 %);
2. the model folder is loaded through its loader plugin and must be a
   :class:`~epsstar.audit.model.text_model.TextModel`;
3. both sides are scored (:func:`~epsstar.audit.engines.text_scoring.score_text`): the mean
   token loss of every record, and what the attacks asked for need; each reference model
   (``ref``) scores them too; with the ``dask`` engine, a range of chunks per task on the
   cluster (:func:`~epsstar.audit.engines.dask_text.score_text_on_dask`), for the same
   scores;
4. the mean token losses are audited like any losses
   (:func:`~epsstar.audit.attacks.from_losses.audit_losses`; the utility is the next-token
   accuracy), then every attack through the registry (:mod:`epsstar.audit.attacks.run`);
5. the blind baseline (:mod:`epsstar.audit.attacks.blind_text`) and the most exposed
   training records of the strongest attack, with excerpts of their text unless hidden;
6. when asked (``TextTables.extraction``), what the model repeats: the extraction test of
   :mod:`epsstar.audit.text_extraction`, in this process (refused on a Dask cluster).
"""

from __future__ import annotations

import dataclasses
import sys
import time
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from epsstar import __version__
from epsstar.audit.attacks.blind_text import blind_baseline, blind_rows
from epsstar.audit.attacks.from_losses import audit_losses
from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.audit.attacks.references import ReferenceConfidences
from epsstar.audit.attacks.registry import needs_of
from epsstar.audit.attacks.run import with_attacks
from epsstar.audit.attacks.scoring import AttackSettings
from epsstar.audit.attacks.sequences import SequenceStatistics, TextInputs
from epsstar.audit.data.checks import GATE_BLOCKED
from epsstar.audit.data.column_match import ColumnMatch
from epsstar.audit.data.files import FileDigest, digests_of
from epsstar.audit.data.progress import Progress
from epsstar.audit.data.reading import Role
from epsstar.audit.data.text_records import (
    TextScan,
    TextTables,
    read_rows,
    scan_text,
    shared_text_warning,
)
from epsstar.audit.engines.text_scoring import ScoringPlan, score_text
from epsstar.audit.model.loading import ModelFile
from epsstar.audit.model.plugins import LoaderInfo
from epsstar.audit.model.text_model import TextModel, text_model_of
from epsstar.audit.options import AuditOptions
from epsstar.audit.output.provenance import EngineRun, Provenance, ReferenceModel, Timings
from epsstar.audit.output.result import AuditResult
from epsstar.audit.output.text_result import (
    ExposedRecord,
    Extraction,
    TextAudit,
    WindowsUsed,
    excerpt,
)
from epsstar.audit.text_extraction import check_fits, extraction
from epsstar.exceptions import InputFileError, InvalidInputError, SuspectDataWarning
from epsstar.plumbing.files.digests import sha256_of, sha256_of_bytes
from epsstar.plumbing.runtime.threads import chosen_threads
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.names import ATTACKS
from epsstar.statistics.utility import Utility

__all__ = ["EXPOSED_RECORDS", "TextRun", "audit_text", "check_text_settings"]

#: The training records of the strongest attack listed as the most exposed.
EXPOSED_RECORDS = 10
_ROLES: tuple[Role, Role] = ("train", "population")

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.engines.dask_engine import Engine


@dataclass(frozen=True, slots=True)
class TextRun:
    """One text audit's settings: the model, the data, the estimation, the attacks, whether
    the report may show the records' text, the progress display (a :class:`Progress` in
    this process, a :class:`~epsstar.audit.engines.dask_audit.PartitionProgress` on a
    cluster), the command line, the most exposed records and where the records are
    scored (``None``: this process)."""

    model: ModelFile
    tables: TextTables
    options: AuditOptions
    attack: AttackSettings
    record_text: bool = True
    progress: object = None
    command: str | None = None
    #: How many training records to list as the most exposed (0: none).
    exposed: int = EXPOSED_RECORDS
    engine: Engine | None = None

    @property
    def on_dask(self) -> bool:
        return self.engine is not None and self.engine.on_dask

    @property
    def table_progress(self) -> Progress | None:
        return self.progress if isinstance(self.progress, Progress) else None


def check_text_settings(
    *,
    slice_by: str | None,
    group_by: str | None,
    attribute: str | None,
    skip_blind_baseline: str | None,
) -> None:
    """Refuse, in one line each, what a text audit does not do: slices, user-level
    Epsilon*, attribute inference and skipping the blind baseline (a text audit always says
    whether its premise holds)."""
    refused = (
        ("--slice-by (slice_by)", slice_by, "slices are drawn from a table's columns"),
        ("--group-by (group_by)", group_by, "users are read from a table's columns"),
        (
            "--attribute (attribute)",
            attribute,
            "attribute inference guesses a column a classifier reads",
        ),
        (
            "--no-blind-baseline",
            skip_blind_baseline,
            "a text audit always runs its blind baseline, so that it says whether the premise "
            "holds",
        ),
    )
    for option, value, why in refused:
        if value is not None:
            raise InvalidInputError(
                f"{option} works with tabular audits only: {why}. Found {value!r} with text "
                f"records (--text-column)."
            )


def _check_attacks(attack: AttackSettings) -> None:
    """Refuse the attacks that read a classifier's labels (LiRA, RMIA)."""
    tabular = [name for name in attack.attacks if "log_odds" in needs_of([name])]
    if tabular:
        usable = [name for name in ATTACKS if "log_odds" not in needs_of([name])]
        raise InvalidInputError(
            f"the {tabular[0]} attack reads a classifier's labels; a text audit runs "
            f"{', '.join(usable)}. Found --attack {' '.join(attack.attacks)}."
        )


def _folder_digests(folder: Path, files: tuple[Path, ...]) -> tuple[FileDigest, ...]:
    """The folder's digest (the SHA-256 of its files' names and digests, in order) first,
    then each file's."""
    each = digests_of(files)
    joined = "\n".join(f"{Path(d.path).name} {d.sha256}" for d in each)
    whole = FileDigest(str(folder), sha256_of_bytes(joined.encode("utf-8")))
    return (whole, *each)


def _scans(tables: TextTables) -> tuple[TextScan, TextScan, dict[Role, str]]:
    """Both data sets scanned, refused when they are one file or the same content."""
    paths = {role: tables.path(role) for role in _ROLES}
    for role, path in paths.items():
        if not path.is_file():
            raise InputFileError(f"{role}: no such file. Found {str(path)!r}.")
    digests = {role: sha256_of(path) for role, path in paths.items()}
    if paths["train"].resolve() == paths["population"].resolve() or (
        digests["train"] == digests["population"]
    ):
        raise InputFileError(
            f"the training and population data must differ: the same records on both sides "
            f"give Epsilon* = 0 whatever the model leaks. Found {str(paths['train'])!r} and "
            f"{str(paths['population'])!r} with the same content."
        )
    column = tables.text_column
    return scan_text(paths["train"], column), scan_text(paths["population"], column), digests


def _plan(attack: AttackSettings, batch_size: int) -> ScoringPlan:
    needs = needs_of(attack.attacks)
    wants_k = any(name in attack.attacks for name in ("mink", "minkpp"))
    return ScoringPlan(
        batch_size,
        min_k=attack.min_k if wants_k else None,
        moments="moments" in needs,
        lowercase="lowercase" in needs,
    )


def _loaded(file: ModelFile, what: str) -> tuple[TextModel, LoaderInfo, str | None]:
    if not file.path.exists():
        raise InputFileError(f"{what}: no such folder. Found {str(file.path)!r}.")
    try:
        loaded = file.load()
    except (InvalidInputError, InputFileError) as error:
        if what == "model":
            raise
        raise type(error)(f"{what} {str(file.path)!r}: {error}") from None
    return text_model_of(loaded.model, loaded.loader.name), loaded.loader, loaded.device


@dataclass(frozen=True, slots=True)
class _Scored:
    train: SequenceStatistics
    population: SequenceStatistics
    windows: tuple[WindowsUsed, WindowsUsed]


def _score(
    model: TextModel, run: TextRun, plan: ScoringPlan, shown: tuple[TextScan, TextScan] | None
) -> _Scored:
    """Both sides scored; ``shown``, the sides' scans, puts the scoring on the progress
    display (with each side's count of records)."""
    tables = run.tables
    records = (None, None) if shown is None else (shown[0].rows, shown[1].rows)
    found = [
        score_text(
            model,
            tables.path(role),
            tables.text_column,
            plan,
            role=role,
            progress=None if shown is None else run.table_progress,
            records=count,
        )
        for role, count in zip(_ROLES, records, strict=True)
    ]
    return _Scored(found[0][0], found[1][0], (found[0][1], found[1][1]))


def _reference_file(run: TextRun, path: Path) -> ModelFile:
    return ModelFile(path, trust=run.model.trust, device=run.model.device)


def _reference_record(path: Path, model: TextModel, loader: LoaderInfo) -> ReferenceModel:
    digests = _folder_digests(path, model.files) if path.is_dir() else digests_of([path])
    return ReferenceModel.from_digests(path, loader.name, digests)


def _confidences(
    losses: list[tuple[FloatArray, FloatArray]],
    models: list[ReferenceModel],
    n: tuple[int, int],
) -> ReferenceConfidences:
    """The reference models' log-likelihoods (minus their mean token losses) on both sides."""
    if not models:
        return ReferenceConfidences(np.empty((0, n[0])), np.empty((0, n[1])), ())
    train = np.vstack([-loss for loss, _ in losses])
    population = np.vstack([-loss for _, loss in losses])
    return ReferenceConfidences(train, population, tuple(models))


def _references(run: TextRun, plan: ScoringPlan, n: tuple[int, int]) -> ReferenceConfidences:
    """The reference models' log-likelihoods on both sides, scored in this process one
    model at a time."""
    losses, models = [], []
    for path in run.attack.reference_models:
        model, loader, _ = _loaded(_reference_file(run, path), "reference model")
        scored = _score(model, run, plan.loss_only, shown=None)
        losses.append((scored.train.loss, scored.population.loss))
        models.append(_reference_record(path, model, loader))
    return _confidences(losses, models, n)


def _on_dask(
    model: TextModel,
    run: TextRun,
    plan: ScoringPlan,
    read: tuple[tuple[TextScan, TextScan], dict[Role, str]],
) -> tuple[_Scored, ReferenceConfidences, EngineRun]:
    """Both sides and the reference models scored on the cluster
    (:mod:`epsstar.audit.engines.dask_text`)."""
    from epsstar.audit.engines.dask_text import TextData, score_text_on_dask
    from epsstar.audit.engines.worker_models import model_spec

    assert run.engine is not None
    scans, digests = read
    specs, models = [], []
    for path in run.attack.reference_models:
        file = _reference_file(run, path)
        reference, loader, _ = _loaded(file, "reference model")
        specs.append(model_spec(file, reference))
        models.append(_reference_record(path, reference, loader))
    column = run.tables.text_column
    data = {
        role: TextData(run.tables.path(role), digests[role], column, scan.rows)
        for role, scan in zip(_ROLES, scans, strict=True)
    }
    found = score_text_on_dask(
        model_spec(run.model, model),
        specs,
        data,
        plan,
        run.engine,
        context=model.info.context,
        progress=run.progress,
    )
    (train, train_windows), (population, population_windows) = (
        found.scored[role] for role in _ROLES
    )
    losses = list(
        zip(found.reference_losses["train"], found.reference_losses["population"], strict=True)
    )
    references = _confidences(losses, models, (train.rows, population.rows))
    ran_on = EngineRun(run.engine.name, run.engine.scheduler, dict(found.tasks))
    return _Scored(train, population, (train_windows, population_windows)), references, ran_on


def _utility(side: SequenceStatistics) -> Utility:
    tokens = int(side.tokens.sum())
    return Utility(
        side.rows, side.correct / tokens, None, f"next-token accuracy, {tokens:,} tokens"
    )


def _provenance(
    run: TextRun, model: TextModel, loader: LoaderInfo, digests: dict[Role, str]
) -> Provenance:
    tables, folder = run.tables, run.model.path
    column = tables.text_column or "(one record per line)"
    return Provenance(
        model=str(folder),
        model_files=_folder_digests(folder, model.files),
        loader=loader,
        output_kind="logits",
        loss="cross_entropy",
        label_column="",
        features=(column,),
        columns=ColumnMatch((column,), ("input_ids",), "features option"),
        input_shape=None,
        classes=(),
        classes_from="column order",
        train=tables.source("train"),
        population=tables.source("population"),
        train_sha256=digests["train"],
        population_sha256=digests["population"],
        shared_rows=0,
        n_train=0,
        n_population=0,
        seed=run.options.seed,
        confidence=run.options.confidence,
        epsstar_version=__version__,
        python=sys.version.split()[0],
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        command=run.command,
        threads=chosen_threads(),
    )


def _checked_result(result: AuditResult, shared: int, line: str | None, gate: bool) -> AuditResult:
    """``result`` with the shared-records warning raised and kept (it fails a gate)."""
    if line is None:
        return result
    said = [line, *([GATE_BLOCKED] if gate else [])]
    for text in said:
        warnings.warn(SuspectDataWarning(text), stacklevel=4)
    return dataclasses.replace(result, warnings=(*result.warnings, *said), gate_blocked=True)


def _exposed(result: AuditResult, run: TextRun, tokens: np.ndarray) -> tuple[ExposedRecord, ...]:
    """The training records the strongest attack finds most member-like, with excerpts
    unless the records' text is hidden."""
    strongest = result.strongest_attack
    if strongest is None or run.exposed == 0:
        return ()
    members, others = strongest.member_scores, np.sort(strongest.nonmember_scores)
    rows = np.argsort(members, kind="stable")[: run.exposed]
    texts = (
        read_rows(run.tables.path("train"), run.tables.text_column, rows.tolist())
        if run.record_text
        else {}
    )
    return tuple(
        ExposedRecord(
            row=int(row),
            attack=strongest.name,
            score=float(members[row]),
            nonmembers_at_or_below=float(
                np.searchsorted(others, members[row], side="right") / others.size
            ),
            tokens=int(tokens[row]),
            excerpt=excerpt(texts[int(row)]) if run.record_text else None,
        )
        for row in rows
    )


def _blind(run: TextRun, scans: tuple[TextScan, TextScan]) -> tuple[list[str], list[str]]:
    """The texts the blind baseline reads: each side's, or a seeded sample of them."""
    sides = []
    for side, (role, scan) in enumerate(zip(_ROLES, scans, strict=True)):
        rows = blind_rows(scan.rows, run.options.seed, side).tolist()
        found = read_rows(run.tables.path(role), run.tables.text_column, rows)
        sides.append([found[row] for row in rows])
    return sides[0], sides[1]


def _premise(result: AuditResult, baseline_holds: bool, lower: float) -> AuditResult:
    if baseline_holds:
        return result
    line = (
        f"the premise fails: a classifier that never sees the model tells the training "
        f"records from the population records (blind lower bound {lower:.3f} > 0); train and "
        f"population differ without the model, so Epsilon* measures that difference, not "
        f"only memorisation"
    )
    warnings.warn(SuspectDataWarning(line), stacklevel=4)
    return dataclasses.replace(result, warnings=(*result.warnings, line))


def _mean_loss_attack(result: AuditResult) -> AuditResult:
    """The loss attack's record said of text: the mean token loss."""
    attacks = tuple(
        dataclasses.replace(a, settings={"score": "mean token loss (cross-entropy, nats)"})
        if a.name == "loss"
        else a
        for a in result.attacks
    )
    return dataclasses.replace(result, attacks=attacks)


def _check_extraction(run: TextRun) -> None:
    """Refuse the extraction test on a Dask cluster: it runs in this process."""
    if run.on_dask and run.tables.extraction is not None:
        assert run.engine is not None
        raise InvalidInputError(
            f"the extraction test (--extraction, --max-extraction-rate) runs in this process: "
            f"drop --engine {run.engine.name} or the extraction options. Found --engine "
            f"{run.engine.name}."
        )


def _extraction(model: TextModel, run: TextRun, rows: tuple[int, int]) -> Extraction | None:
    """The extraction test when asked (:mod:`epsstar.audit.text_extraction`)."""
    if run.tables.extraction is None:
        return None
    return extraction(model, run.tables, rows, run.options.seed, run.options.confidence)


def audit_text(run: TextRun) -> AuditResult:
    """Audit the language model of ``run`` on its text records (see the module docstring)."""
    _check_attacks(run.attack)
    _check_extraction(run)
    started = time.perf_counter()
    train_scan, population_scan, digests = _scans(run.tables)
    model, loader, device = _loaded(run.model, "model")
    if run.tables.extraction is not None:
        check_fits(model, run.tables.extraction)
    loaded = time.perf_counter()
    plan = _plan(run.attack, run.tables.batch_size)
    ran_on = None
    if run.on_dask:
        read = ((train_scan, population_scan), digests)
        scored, references, ran_on = _on_dask(model, run, plan, read)
    else:
        scored = _score(model, run, plan, shown=(train_scan, population_scan))
        references = _references(run, plan, (scored.train.rows, scored.population.rows))
    inferred = time.perf_counter()
    utility = {"population": _utility(scored.population), "train": _utility(scored.train)}
    provenance = dataclasses.replace(
        _provenance(run, model, loader, digests),
        n_train=scored.train.rows,
        n_population=scored.population.rows,
        device=device,
        engine=ran_on,
        threads=None if run.on_dask else chosen_threads(),
    )
    result = audit_losses(
        scored.train.loss,
        scored.population.loss,
        utility=utility,
        options=run.options,
        provenance=provenance,
    )
    statistics = time.perf_counter()
    shared, line = shared_text_warning(train_scan, population_scan)
    gate = run.options.max_epsilon is not None
    result = _checked_result(result, shared, line, gate)
    inputs = AttackInputs(
        target=(-scored.train.loss, -scored.population.loss),
        references=references,
        text=TextInputs(scored.train, scored.population, run.attack.min_k),
    )
    result = _mean_loss_attack(with_attacks(result, run.attack, inputs, run.options))
    baseline = blind_baseline(*_blind(run, (train_scan, population_scan)), run.options)
    result = _premise(result, baseline.premise_holds, baseline.lower_bound.epsilon)
    repeated = _extraction(model, run, (train_scan.rows, population_scan.rows))
    ended = time.perf_counter()
    seconds = Timings(
        load=round(loaded - started, 3),
        inference=round(inferred - loaded, 3),
        statistics=round(statistics - inferred, 3),
        utility=0.0,
        total=round(ended - started, 3),
        attacks=round(ended - statistics, 3),
    )
    assert result.provenance is not None
    final = dataclasses.replace(
        result.provenance,
        shared_rows=shared,
        seconds=seconds,
        reference_models=references.models or None,
    )
    text = TextAudit(
        model=model.info,
        text_column=run.tables.text_column,
        tokens=(int(scored.train.tokens.sum()), int(scored.population.tokens.sum())),
        windows=scored.windows,
        shared_records=shared,
        exposed=_exposed(result, run, scored.train.tokens),
        record_text=run.record_text,
        blind_baseline=baseline,
        extraction=repeated,
    )
    declared = getattr(model, "declared_privacy", None)
    return dataclasses.replace(result, provenance=final, text=text, declared_privacy=declared)
