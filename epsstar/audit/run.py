"""Audit one saved model: load it, stream both tables through it, measure the losses.

:func:`audit` is a composition of three steps, each usable on its own:

1. :func:`load_model` resolves the loader plugin (:mod:`epsstar.audit.model.plugins`) and loads
   the model file, with the class labels of its outputs;
2. :func:`epsstar.audit.engines.streaming.stream_table` runs the model over the training and then
   the population table in batches: per-record losses, accuracy and AUROC inputs;
3. :func:`epsstar.audit.attacks.from_losses.audit_losses` turns the two loss arrays into Epsilon*,
   its empirical value, the held-out lower bound and the readings, with no I/O.

Provenance (files, the model's SHA-256, the loader, timings, the command line) is
assembled here.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from epsstar import __version__
from epsstar.audit.attacks.from_losses import AuditOptions, audit_losses
from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.audit.attacks.run import with_attacks
from epsstar.audit.attacks.scoring import LOSS_ONLY, AttackSettings
from epsstar.audit.attacks.slices import SliceKeys, audit_slices, read_slice_keys
from epsstar.audit.data.checks import data_warnings, refuse_same_data, shared_rows
from epsstar.audit.data.column_match import ColumnMatch, match_model_columns
from epsstar.audit.data.files import sha256_of
from epsstar.audit.data.progress import Progress
from epsstar.audit.data.reading import TableReading
from epsstar.audit.data.tables import read_schema
from epsstar.audit.engines.references import attack_inputs
from epsstar.audit.engines.streaming import StreamedTable, stream_table
from epsstar.audit.engines.summaries import SummaryPlans, can_summarise, losses_of, summarise_table
from epsstar.audit.model.loading import LoadedAuditModel, load_model
from epsstar.audit.model.output_reading import OutputReading
from epsstar.audit.model.plugins import OutputKind
from epsstar.audit.output.result import AuditResult
from epsstar.exceptions import (
    ColumnOrderWarning,
    EpsstarWarning,
    InputFileError,
    InvalidInputError,
    OutputReadingWarning,
    SuspectDataWarning,
)
from epsstar.statistics._validation import check_positive_int
from epsstar.statistics.names import DEFAULT_GATE, Family, GateRule, LossName, Method
from epsstar.statistics.utility import Utility

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.engines.dask_engine import Engine

__all__ = ["AuditResult", "LoadedAuditModel", "audit", "load_model", "sha256_of"]


@dataclass(frozen=True, slots=True)
class _Streamed:
    """Both tables as streamed, the column match, the data's digests, the ``engine``
    record of the provenance (empty in one process) and, when the reference models ran
    where the tables were streamed, their log-odds and the target's."""

    train: StreamedTable
    population: StreamedTable
    match: ColumnMatch
    digests: dict[str, str]
    ran_on: dict[str, Any]
    attack_inputs: AttackInputs | None = None


def _existing(**paths: str | Path) -> dict[str, Path]:
    """The paths, each checked to be a file."""
    checked = {name: Path(path) for name, path in paths.items()}
    for name, path in checked.items():
        if path.is_dir():
            raise InputFileError(f"{name}: must be a file, not a directory. Found {str(path)!r}.")
        if not path.is_file():
            raise InputFileError(f"{name}: no such file. Found {str(path)!r}.")
    return checked


@dataclass(frozen=True, slots=True)
class _Reading:
    """How the tables are read and scored: the audit's settings for streaming."""

    label_column: str
    features: Sequence[str] | None
    batch_size: int
    loss: LossName
    outputs: OutputKind | None
    input_shape: tuple[int, ...] | None = None


def _match(loaded: LoadedAuditModel, path: Path, model: Path, reading: _Reading) -> ColumnMatch:
    """The columns of the table at ``path`` the model receives (see column_match)."""
    return match_model_columns(
        loaded.model,
        read_schema(path).columns,
        reading.label_column,
        features=reading.features,
        model_path=model,
        data=path,
    )


def _stream_both(
    loaded: LoadedAuditModel,
    paths: dict[str, Path],
    reading: _Reading,
    progress: Progress | None,
) -> tuple[StreamedTable, StreamedTable, ColumnMatch]:
    """The training table, then the population table, encoded with the same label map, and
    how the training table's columns were matched to the model's inputs."""
    matches = {
        role: _match(loaded, paths[role], paths["model"], reading)
        for role in ("train", "population")
    }
    common = {
        "label_column": reading.label_column,
        "batch_size": reading.batch_size,
        "loss": reading.loss,
        "outputs_requested": reading.outputs is not None,
        "progress": progress,
        "input_shape": reading.input_shape,
    }
    train = stream_table(
        loaded.model,
        paths["train"],
        role="train",
        features=matches["train"].file_columns,
        model_names=matches["train"].model_names if matches["train"].renamed else None,
        classes=loaded.classes,
        **common,  # type: ignore[arg-type]
    )
    population = stream_table(
        loaded.model,
        paths["population"],
        role="population",
        features=matches["population"].file_columns,
        model_names=matches["population"].model_names if matches["population"].renamed else None,
        label_map=train.label_map,
        **common,  # type: ignore[arg-type]
    )
    return train, population, matches["train"]


def _provenance(
    paths: dict[str, Path | str],
    loaded: LoadedAuditModel,
    reading: _Reading,
    train: StreamedTable,
    population: StreamedTable,
    **run: object,
) -> dict[str, Any]:
    """What was audited and how, for the JSON and the report (timings are added later).

    ``run`` holds the seed, the confidence, the command line and the data checks
    (the data files' SHA-256, the number of population rows also in the training data).
    """
    checks: _Checks = run["checks"]  # type: ignore[assignment]
    match: ColumnMatch = run["match"]  # type: ignore[assignment]
    model = Path(paths["model"])
    files = [Path(f) for f in getattr(loaded.model, "files", (model,))]
    return {
        "model": str(model),
        "model_sha256": sha256_of(model),
        "model_files": [{"path": str(f), "sha256": sha256_of(f)} for f in files],
        "loader": loaded.loader.to_dict(),
        "output_kind": loaded.model.output_kind,
        "loss": reading.loss,
        "label_column": reading.label_column,
        "features": list(reading.features) if reading.features is not None else None,
        **match.to_dict(),
        "input_shape": None if reading.input_shape is None else list(reading.input_shape),
        "classes": [str(c) for c in train.label_map.classes],
        "classes_from": loaded.classes_from,
        "train": str(paths["train"]),
        "population": str(paths["population"]),
        "train_sha256": checks.digests["train"],
        "population_sha256": checks.digests["population"],
        "shared_rows": checks.shared_rows,
        "n_train": train.rows,
        "n_population": population.rows,
        "seed": run["seed"],
        "confidence": run["confidence"],
        "epsstar_version": __version__,
        "python": sys.version.split()[0],
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": run["command"],
        **({"engine": run["engine"]} if "engine" in run else {}),
    }


def audit(
    model: str | Path,
    train: str | Path,
    population: str | Path,
    *,
    label_column: str,
    features: Sequence[str] | None = None,
    delta: float | None = None,
    loader: str | None = None,
    outputs: OutputKind | None = None,
    loss: LossName = "logit",
    method: Method | None = None,
    family: Family = "normal",
    interval: float | None = None,
    n_bootstrap: int = 200,
    max_epsilon: float | None = None,
    gate: GateRule = DEFAULT_GATE,
    confidence: float = 0.95,
    trust: bool = False,
    seed: int = 0,
    batch_size: int = 16_384,
    classes: Sequence[object] | None = None,
    progress: Progress | None = None,
    command: str | None = None,
    input_shape: Sequence[int] | None = None,
    engine: Engine | None = None,
    storage_options: dict[str, Any] | None = None,
    attack: AttackSettings = LOSS_ONLY,
    slice_by: str | None = None,
) -> AuditResult:
    """Audit a saved model against its training data and population data.

    ``delta`` defaults to 1/(n ln n), n the training rows (the paper's choice, §4.1).
    ``loader`` names an ``epsstar.loaders`` plugin (default: by the file's suffix);
    ``outputs`` overrides its logits/probabilities detection; ``trust`` allows formats
    that can execute code when loaded. ``classes`` are the class labels of the model's
    outputs, in column order (default: those the model file states, else 0..K−1).
    ``method`` chooses the headline estimator (default: the estimator's default);
    ``interval`` (a level such as 0.95) adds a bootstrap interval from ``n_bootstrap``
    resamples. ``max_epsilon`` is the release gate's limit, ``gate`` its rule
    (:mod:`epsstar.statistics.bounds.gate`). ``progress`` (:class:`.data.progress.Progress`)
    is told as the rows are read. The result is deterministic for a given ``seed``.

    Columns reach the model by the names it records, else as ``features`` names them, else
    by position, with a warning (:mod:`epsstar.audit.data.column_match`); ``input_shape``
    reshapes each record (e.g. 64 pixel columns into ``(1, 8, 8)``) for tensor models.

    One file (or two with the same content) as both data sets is refused. A single class,
    population rows also in the training data, or an ambiguous output reading raise a
    warning (``result.warnings``) that fails a gate (:mod:`epsstar.audit.data.checks`).
    ``attack`` chooses the membership tests (``result.attacks``, :mod:`.attack_run`),
    ``slice_by`` a column to audit each value of (``result.slices``, :mod:`.slices`).

    With a ``dask`` ``engine``, the data may be partitioned data sets streamed on a cluster
    (:mod:`epsstar.audit.engines.dask_audit`), for the same result as here on the same rows.
    """
    on_dask = engine is not None and engine.name == "dask"
    paths = _existing(
        model=model, **({} if on_dask else {"train": train, "population": population})
    )
    options = AuditOptions(  # its fields in order
        delta, method, family, interval, n_bootstrap, max_epsilon, confidence, seed, gate
    )
    reading = _reading(label_column, features, batch_size, loss, outputs, input_shape)
    _check_progress(None if on_dask else progress)
    digests = {} if on_dask else _distinct_data(paths)
    clock = [time.perf_counter()]
    loaded = load_model(
        paths["model"], loader=loader, outputs=outputs, trust=trust, classes=classes
    )
    clock.append(time.perf_counter())
    run = {"seed": seed, "confidence": options.confidence, "command": command}
    after = (attack, trust, progress, _slice_keys(slice_by, paths, on_dask))
    if engine is not None and on_dask:
        sources: dict[str, Path | str] = {**paths, "train": train, "population": population}
        dask_run = (engine, trust, storage_options, progress, attack, options)
        streamed = _stream_on_dask(loaded, sources, reading, dask_run)
        return _finish(loaded, reading, streamed, sources, options, run, clock, after)
    streamed = _Streamed(*_stream_both(loaded, paths, reading, progress), digests, {})
    return _finish(loaded, reading, streamed, dict(paths), options, run, clock, after)


def _finish(
    loaded: LoadedAuditModel,
    reading: _Reading,
    streamed: _Streamed,
    sources: dict[str, Path | str],
    options: AuditOptions,
    run: dict[str, Any],
    clock: list[float],
    after: tuple[AttackSettings, bool, Progress | None, SliceKeys | None],
) -> AuditResult:
    """The audit of the streamed tables (``streamed``: both tables, the column match, the
    data's digests and the ``engine`` record, if any): data checks, utility, statistics,
    then the attacks of ``after`` (with whether to trust model files, the progress and
    the slices of the records, if any)."""
    streamed, plans = _summarised(streamed, options, after)
    train_side, population_side, match = streamed.train, streamed.population, streamed.match
    digests, ran_on = streamed.digests, streamed.ran_on
    model = Path(sources["model"])
    checks = _check_data(loaded, reading, (train_side, population_side), digests, match, model)
    clock.append(time.perf_counter())
    utility = _utility(train_side, population_side)
    clock.append(time.perf_counter())
    provenance = _provenance(
        sources,
        loaded,
        reading,
        train_side,
        population_side,
        checks=checks,
        match=match,
        **run,
        **ran_on,
    )
    if plans is not None:
        provenance["summaries"] = plans.to_dict()
    losses = (losses_of(train_side), losses_of(population_side))
    result = audit_losses(*losses, utility=utility, options=options, provenance=provenance)
    clock.append(time.perf_counter())
    result = checks.record(result, gate=options.max_epsilon is not None)
    timed = {**provenance, "seconds": _seconds(clock)}  # the statistics' time is known now
    result = dataclasses.replace(result, provenance=timed, declared_privacy=_declared(loaded))
    attack, trust, progress, keys = after
    paths = {role: Path(os.fspath(where)) for role, where in sources.items()}
    started = time.perf_counter()
    result = _attacked(result, attack, loaded, paths, reading, streamed, options, trust, progress)
    others = any(attack.name != "loss" for attack in result.attacks)
    extra = {"attacks": time.perf_counter() - started} if others else {}
    if keys is not None:
        started = time.perf_counter()
        result = dataclasses.replace(result, slices=audit_slices(result, keys, options))
        extra["slices"] = time.perf_counter() - started
    return _with_seconds(result, extra)


def _summarised(
    streamed: _Streamed,
    options: AuditOptions,
    after: tuple[AttackSettings, bool, Progress | None, SliceKeys | None],
) -> tuple[_Streamed, SummaryPlans | None]:
    """Both tables with the sides too large to hold whole summarised, as a Dask cluster's
    workers summarise them (:mod:`epsstar.audit.engines.summaries`), and the plans (``None``: every
    loss kept)."""
    attack, _, _, keys = after
    if not can_summarise(
        options.headline_method, options.interval, attack.attacks, keys is not None
    ):
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


def _with_seconds(result: AuditResult, extra: dict[str, float]) -> AuditResult:
    """``result`` with the seconds of the steps after the statistics (the attacks beyond
    the loss attack, the slices) in ``provenance.seconds``, and in its total."""
    if not extra:
        return result
    seconds = dict(result.provenance["seconds"])
    seconds.update({step: round(value, 3) for step, value in extra.items()})
    seconds["total"] = round(seconds["total"] + sum(extra.values()), 3)
    return dataclasses.replace(result, provenance={**result.provenance, "seconds": seconds})


def _slice_keys(
    column: str | None,
    paths: dict[str, Path],
    on_dask: bool,
) -> SliceKeys | None:
    """The slices of ``column`` (read now, so that a bad column fails before any model
    runs), or ``None`` without one."""
    if column is None:
        return None
    if on_dask:
        raise InvalidInputError(
            f"slice_by works with the single-process engine only. Found slice_by {column!r} "
            f"with the dask engine."
        )
    return read_slice_keys(paths["train"], paths["population"], column)


def _reading(
    label_column: str,
    features: Sequence[str] | None,
    batch_size: int,
    loss: LossName,
    outputs: OutputKind | None,
    input_shape: Sequence[int] | None,
) -> _Reading:
    """The audit's settings for streaming, checked."""
    size = check_positive_int("batch_size", batch_size)
    return _Reading(label_column, _feature_list(features), size, loss, outputs, _shape(input_shape))


def _declared(loaded: LoadedAuditModel) -> Any:
    """The DP guarantee the model file declares (``None``: it declares none)."""
    return getattr(loaded.model, "declared_privacy", None)


def _attacked(
    result: AuditResult,
    attack: AttackSettings,
    loaded: LoadedAuditModel,
    paths: dict[str, Path],
    reading: _Reading,
    streamed: _Streamed,
    options: AuditOptions,
    trust: bool,
    progress: Progress | None,
) -> AuditResult:
    """``result`` with the records of ``attack``'s membership tests (:mod:`.attacks.run`);
    the log-odds the reference-model attacks need are read here unless the engine that
    streamed the tables read them already."""
    inputs = streamed.attack_inputs
    if inputs is None and any(name != "loss" for name in attack.attacks):
        train_side, population_side = streamed.train, streamed.population
        logit = (train_side.losses, population_side.losses) if reading.loss == "logit" else None
        inputs = attack_inputs(
            (loaded.model, paths["model"]),
            attack.reference_models,
            TableReading(
                paths["train"],
                paths["population"],
                reading.label_column,
                reading.features,
                reading.batch_size,
                reading.input_shape,
            ),
            train_side.label_map,
            logit_losses=logit,
            trust=trust,
            progress=progress,
        )
    return with_attacks(result, attack, inputs, options)


def _stream_on_dask(
    loaded: LoadedAuditModel,
    sources: dict[str, Path | str],
    reading: _Reading,
    run: tuple[Engine, bool, dict[str, Any] | None, object, AttackSettings, AuditOptions],
) -> _Streamed:
    """Both data sets streamed on a Dask cluster (``run``: the engine, whether to trust the
    model file, the storage options, the progress and the attacks, whose reference models
    run on the workers too): the tables, the column match, the data sets' digests, the
    ``engine`` record of the provenance and the attacks' log-odds."""
    from epsstar.audit.engines.dask_audit import stream_on_dask

    engine, trust, storage_options, progress, attack, options = run
    needs = any(name != "loss" for name in attack.attacks)
    summarises = can_summarise(options.headline_method, options.interval, attack.attacks, False)
    streams = stream_on_dask(
        loaded,
        Path(sources["model"]),
        (os.fspath(sources["train"]), os.fspath(sources["population"])),
        reading,
        engine,
        trust=trust,
        storage_options=storage_options,
        progress=progress,
        reference_models=attack.reference_models if needs else (),
        summarise_seed=options.seed if summarises else None,
    )
    ran_on = {"engine": {**engine.to_dict(), "partitions": streams.partitions}}
    return _Streamed(
        streams.train,
        streams.population,
        streams.match,
        streams.digests,
        ran_on,
        streams.attack_inputs,
    )


def _distinct_data(paths: dict[str, Path]) -> dict[str, str]:
    """The SHA-256 of the training and population files, refused when they are one file
    or have the same content."""
    digests = {role: sha256_of(paths[role]) for role in ("train", "population")}
    refuse_same_data(paths["train"], paths["population"], digests)
    return digests


@dataclass(frozen=True, slots=True)
class _Checks:
    """What the audit found suspect in its inputs, and how the model's outputs were read."""

    output_reading: OutputReading
    digests: dict[str, str]
    shared_rows: int
    #: (category, line, whether it fails a release gate)
    found: tuple[tuple[type[EpsstarWarning], str, bool], ...]

    def warn(self, *, gate: bool) -> tuple[tuple[str, ...], bool]:
        """Raise each warning (and, with a gate, the gate's failure); return their lines and
        whether one of them fails the gate."""
        found = [(category, line) for category, line, _ in self.found]
        blocked = any(blocks for _, _, blocks in self.found)
        if gate and blocked:
            found.append(
                (
                    SuspectDataWarning,
                    "the release gate fails: with the warnings above, Epsilon* cannot show "
                    "that the model is within --max-epsilon",
                )
            )
        for category, line in found:
            warnings.warn(category(line), stacklevel=4)
        return tuple(line for _, line in found), blocked

    def record(self, result: AuditResult, *, gate: bool) -> AuditResult:
        """``result`` with the warnings raised and kept, and the output reading."""
        said, blocked = self.warn(gate=gate)
        return dataclasses.replace(
            result, warnings=said, gate_blocked=blocked, output_reading=self.output_reading
        )


def _output_reading(loaded: LoadedAuditModel, requested: bool) -> OutputReading:
    kind = loaded.model.output_kind
    if requested:
        return OutputReading(kind, "requested", "as the outputs option says")
    detected = getattr(loaded.model, "output_reading", None)
    if isinstance(detected, OutputReading) and detected.kind == kind:
        return detected
    return OutputReading(kind, "loader", f"as the {loaded.loader.name} loader chose")


def _check_data(
    loaded: LoadedAuditModel,
    reading: _Reading,
    tables: tuple[StreamedTable, StreamedTable],
    digests: dict[str, str],
    match: ColumnMatch,
    model_path: Path,
) -> _Checks:
    """Check both tables for shared rows and single classes; describe the output reading
    and warn when columns were matched by position."""
    train, population = tables
    scans = [train.scan, population.scan]
    found: list[tuple[type[EpsstarWarning], str, bool]] = [
        (SuspectDataWarning, line, blocks_gate)
        for line, blocks_gate in data_warnings(scans[0], scans[1], train.label_map.classes)
    ]
    by_position = match.position_warning(model_path)
    if by_position is not None:
        found.append((ColumnOrderWarning, by_position, False))
    output_reading = _output_reading(loaded, reading.outputs is not None)
    if output_reading.ambiguous:
        found.append((OutputReadingWarning, output_reading.describe(), True))
    return _Checks(output_reading, digests, shared_rows(scans[0], scans[1]), tuple(found))


def _feature_list(features: Sequence[str] | None) -> tuple[str, ...] | None:
    if features is None:
        return None
    if isinstance(features, str):
        raise InvalidInputError(
            f"features must be a sequence of column names. Found the string {features!r}."
        )
    names = tuple(str(name) for name in features)
    repeated = [name for name in names if names.count(name) > 1]
    if repeated:
        raise InvalidInputError(
            f"features must name each column once. Found {repeated[0]!r} twice."
        )
    if not names:
        raise InvalidInputError("features must name at least one column. Found none.")
    return names


def _shape(shape: Sequence[int] | None) -> tuple[int, ...] | None:
    """``input_shape`` checked: positive whole numbers."""
    if shape is None:
        return None
    values = tuple(shape) if not isinstance(shape, (str, bytes)) else ()
    if not values or not all(
        isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in values
    ):
        raise InvalidInputError(
            f"input_shape must be one or more positive whole numbers (e.g. 1,8,8). Found {shape!r}."
        )
    return values


def _check_progress(progress: object) -> None:
    if progress is not None and not isinstance(progress, Progress):
        raise InvalidInputError(
            f"progress must be None or have start(role, path) and advance(rows). "
            f"Found {progress!r}."
        )


def _utility(train: StreamedTable, population: StreamedTable) -> dict[str, Utility]:
    """Accuracy and AUROC per table; multi-class AUROC costs one sort per class, so on
    training data accuracy suffices."""
    return {
        "population": population.utility(),
        "train": train.utility(with_auroc=train.n_outputs <= 2),
    }


def _seconds(clock: list[float]) -> dict[str, float]:
    """Durations of the steps from the times at start, loaded, streamed, utility, statistics."""
    started, loaded, streamed, utility, finished = clock
    return {
        "load": round(loaded - started, 3),
        "inference": round(streamed - loaded, 3),
        "statistics": round(finished - utility, 3),
        "utility": round(utility - streamed, 3),
        "total": round(finished - started, 3),
    }
