"""Audit many models from a manifest and summarise them per strategy.

A manifest lists one model per row (CSV) or per ``[[models]]`` table (TOML):
``model``, ``train`` (or ``train_data``), ``population`` (or
``population_data``), ``label_column``, ``strategy`` and ``repeat``, optionally
``features`` (comma-separated), ``loader`` and ``outputs``. In TOML, top-level
keys are defaults for every model. Any other column is a hyper-parameter of the
strategy and is carried into the results (``epsstar train``'s sweep manifest is
one such file). Relative paths are relative to the manifest's folder.

Models are audited in parallel processes; a model that cannot be audited is
reported with its error and does not lose the others' results. Per strategy,
the summary gives min/mean/max Epsilon* and the mechanism-level bound over its
repeats, log mean exp(ε*) (Theorem 2 of ``epsilon-star-negoescu-2024.md``).
"""

from __future__ import annotations

import csv
import multiprocessing
import tomllib
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from epsstar.exceptions import EpsstarError, InputFileError
from epsstar.statistics._validation import check_positive_int
from epsstar.statistics.bounds import mechanism_epsilon

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.result import AuditResult

__all__ = ["ManifestEntry", "StrategySummary", "audit_many", "read_manifest", "summarise"]

_ALIASES = {"train_data": "train", "population_data": "population", "path": "model"}
_KNOWN = (
    "model",
    "train",
    "population",
    "label_column",
    "strategy",
    "repeat",
    "features",
    "loader",
    "outputs",
)
_REQUIRED = ("model", "train", "population", "label_column")


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One model to audit and the strategy it belongs to."""

    model: Path
    train: Path
    population: Path
    label_column: str
    strategy: str
    repeat: int
    features: tuple[str, ...] | None = None
    loader: str | None = None
    outputs: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        return {
            "model": str(self.model),
            "train": str(self.train),
            "population": str(self.population),
            "label_column": self.label_column,
            "strategy": self.strategy,
            "repeat": self.repeat,
            "params": dict(self.params),
        }


def _entry(raw: Mapping[str, Any], base: Path, where: str) -> ManifestEntry:
    row = {_ALIASES.get(key, key): value for key, value in raw.items()}
    row = {key: value for key, value in row.items() if value not in ("", None)}
    missing = [key for key in _REQUIRED if key not in row]
    if missing:
        raise InputFileError(f"{where}: missing {', '.join(missing)}. Found keys {sorted(row)}.")

    def path(key: str) -> Path:
        value = Path(str(row[key]))
        return value if value.is_absolute() else base / value

    features = row.get("features")
    if isinstance(features, str):
        features = [name.strip() for name in features.split(",") if name.strip()]
    try:
        repeat = int(row.get("repeat", 0))
    except (TypeError, ValueError):
        raise InputFileError(
            f"{where}: repeat must be an integer. Found {row['repeat']!r}."
        ) from None
    model = path("model")
    return ManifestEntry(
        model=model,
        train=path("train"),
        population=path("population"),
        label_column=str(row["label_column"]),
        strategy=str(row.get("strategy", model.stem)),
        repeat=repeat,
        features=tuple(features) if features else None,
        loader=row.get("loader"),
        outputs=row.get("outputs"),
        params={key: value for key, value in row.items() if key not in _KNOWN},
    )


def read_manifest(path: str | Path) -> list[ManifestEntry]:
    """Entries of a CSV or TOML manifest."""
    file = Path(path)
    if not file.is_file():
        raise InputFileError(f"manifest: no such file. Found {str(file)!r}.")
    base = file.resolve().parent
    suffix = file.suffix.lower()
    if suffix == ".toml":
        try:
            document = tomllib.loads(file.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
            raise InputFileError(f"{file}: not valid TOML ({error}).") from None
        models = document.get("models")
        if not isinstance(models, list) or not models:
            raise InputFileError(f"{file}: expected one or more [[models]] tables. Found none.")
        defaults = {key: value for key, value in document.items() if key != "models"}
        return [
            _entry({**defaults, **model}, base, f"{file} model {index + 1}")
            for index, model in enumerate(models)
        ]
    if suffix == ".csv":
        with file.open(newline="", encoding="utf-8") as stream:
            rows = list(csv.DictReader(stream))
        if not rows:
            raise InputFileError(f"{file}: the manifest lists no models. Found 0 rows.")
        return [_entry(row, base, f"{file} row {index + 2}") for index, row in enumerate(rows)]
    raise InputFileError(f"manifest must be a .csv or .toml file. Found {str(file)!r}.")


@dataclass(frozen=True, slots=True)
class StrategySummary:
    """Epsilon* over the audited repeats of one strategy."""

    strategy: str
    n_models: int
    n_failed: int
    epsilon_min: float | None
    epsilon_mean: float | None
    epsilon_max: float | None
    mechanism_epsilon: float | None
    params: Mapping[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "n_models": self.n_models,
            "n_failed": self.n_failed,
            "epsilon_star_min": self.epsilon_min,
            "epsilon_star_mean": self.epsilon_mean,
            "epsilon_star_max": self.epsilon_max,
            "mechanism_epsilon": self.mechanism_epsilon,
            "params": dict(self.params),
        }


def summarise(records: Iterable[Mapping[str, Any]]) -> list[StrategySummary]:
    """Per-strategy statistics of audit records (in first-seen strategy order)."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for record in records:
        groups.setdefault(record["entry"]["strategy"], []).append(record)
    summaries = []
    for strategy, members in groups.items():
        values = [m["result"]["epsilon_star"] for m in members if m.get("result")]
        params = {k: v for k, v in members[0]["entry"]["params"].items() if k not in ("seed",)}
        summaries.append(
            StrategySummary(
                strategy=strategy,
                n_models=len(members),
                n_failed=sum(1 for m in members if m.get("error")),
                epsilon_min=min(values) if values else None,
                epsilon_mean=float(np.mean(values)) if values else None,
                epsilon_max=max(values) if values else None,
                mechanism_epsilon=mechanism_epsilon(values) if values else None,
                params=params,
            )
        )
    return summaries


def _report_name(entry: ManifestEntry) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in entry.strategy)
    return f"{safe}-{entry.repeat}.html"


#: Writes one model's report: ``(result, path) -> path written``. It must be a
#: module-level function, since it travels to worker processes by reference.
ReportWriter = Callable[["AuditResult", Path], Path]


def _audit_one(
    entry: ManifestEntry,
    options: Mapping[str, Any],
    report_dir: Path | None = None,
    write_report: ReportWriter | None = None,
) -> dict[str, Any]:
    """Worker: audit one entry (and write its report); errors become a message."""
    import warnings

    from epsstar.audit.run import audit

    record: dict[str, Any] = {"entry": entry.describe()}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = audit(
                entry.model,
                entry.train,
                entry.population,
                label_column=entry.label_column,
                features=entry.features,
                loader=entry.loader,
                outputs=entry.outputs,  # type: ignore[arg-type]
                **options,
            )
        record["result"] = result.to_dict()
        record["warnings"] = [str(w.message) for w in caught]
        if report_dir is not None and write_report is not None:
            record["report"] = str(write_report(result, report_dir / _report_name(entry)))
    except EpsstarError as error:
        record["error"] = str(error)
    except Exception as error:  # one broken model must not stop the others
        record["error"] = f"unexpected {type(error).__name__}: {error}"
    return record


def audit_many(
    entries: list[ManifestEntry],
    *,
    jobs: int = 2,
    on_done: Callable[[dict[str, Any]], None] | None = None,
    report_dir: Path | None = None,
    write_report: ReportWriter | None = None,
    **options: Any,
) -> list[dict[str, Any]]:
    """Audit every entry (``options`` go to :func:`epsstar.audit.audit`), in manifest order.

    With ``report_dir`` and ``write_report``, each audited model's report is written
    there by ``write_report`` and its path recorded under ``"report"``.
    """
    jobs = check_positive_int("jobs", jobs)
    if report_dir is not None:
        report_dir = Path(report_dir)
        try:
            report_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise InputFileError(
                f"cannot create the report folder {str(report_dir)!r}: {error}."
            ) from None
    records: list[dict[str, Any] | None] = [None] * len(entries)
    if jobs == 1:
        for index, entry in enumerate(entries):
            records[index] = _audit_one(entry, options, report_dir, write_report)
            if on_done:
                on_done(records[index])  # type: ignore[arg-type]
    else:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
            futures = {
                pool.submit(_audit_one, entry, options, report_dir, write_report): i
                for i, entry in enumerate(entries)
            }
            for future in as_completed(futures):
                index = futures[future]
                records[index] = future.result()
                if on_done:
                    on_done(records[index])  # type: ignore[arg-type]
    return [record for record in records if record is not None]
