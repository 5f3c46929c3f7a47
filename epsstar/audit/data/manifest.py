"""The ``audit-many`` manifest: one model to audit per CSV row or ``[[models]]`` TOML table.

Columns: ``model``, ``train`` (or ``train_data``), ``population`` (or ``population_data``),
``label_column``, ``strategy`` and ``repeat``, optionally ``features`` (comma-separated),
``loader`` and ``outputs``. In TOML, top-level keys are defaults for every model. Any other
column is a hyper-parameter of the strategy and is carried into the results (``epsstar
sweep``'s manifest is one such file). Relative paths are relative to the manifest's folder.
"""

from __future__ import annotations

import csv
import io
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from epsstar.exceptions import InputFileError

__all__ = ["ManifestEntry", "read_manifest"]

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


def _manifest_text(file: Path) -> str:
    """The manifest's text; it must be UTF-8 (a byte-order mark is dropped)."""
    try:
        return file.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        byte = error.object[error.start : error.start + 1].hex()
        raise InputFileError(
            f"{file}: a manifest must be UTF-8 text. Found the byte 0x{byte} at offset "
            f"{error.start}, which is not."
        ) from None
    except OSError as error:
        message = error.strerror or str(error)
        raise InputFileError(f"{file}: cannot read the manifest: {message}.") from None


def _csv_rows(file: Path, text: str) -> list[tuple[int, dict[str, str]]]:
    """The rows of a CSV manifest, each as wide as its header, which names each column once."""
    try:
        lines = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as error:
        raise InputFileError(f"{file}: must be a readable CSV manifest. Found: {error}.") from None
    numbered = [(number, row) for number, row in enumerate(lines, start=1) if row]
    if not numbered:
        raise InputFileError(f"{file}: the manifest lists no models. Found an empty file.")
    header = [name.strip() for name in numbered[0][1]]
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise InputFileError(
            f"{file}: manifest columns must be named once. Found {', '.join(map(repr, repeated))} "
            f"more than once."
        )
    rows = []
    for number, row in numbered[1:]:
        if len(row) != len(header):
            raise InputFileError(
                f"{file}: every manifest row must have as many fields as the header "
                f"({len(header)}). Found {len(row)} fields on row {number}."
            )
        rows.append((number, dict(zip(header, row, strict=True))))
    return rows


def read_manifest(path: str | Path) -> list[ManifestEntry]:
    """Entries of a CSV or TOML manifest (UTF-8 text)."""
    file = Path(path)
    if file.is_dir():
        raise InputFileError(f"manifest: must be a file, not a directory. Found {str(file)!r}.")
    if not file.is_file():
        raise InputFileError(f"manifest: no such file. Found {str(file)!r}.")
    base = file.resolve().parent
    suffix = file.suffix.lower()
    if suffix not in (".toml", ".csv"):
        raise InputFileError(f"manifest must be a .csv or .toml file. Found {str(file)!r}.")
    text = _manifest_text(file)
    if suffix == ".toml":
        try:
            document = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise InputFileError(f"{file}: not valid TOML ({error}).") from None
        models = document.get("models")
        if not isinstance(models, list) or not models:
            raise InputFileError(f"{file}: expected one or more [[models]] tables. Found none.")
        odd = next((model for model in models if not isinstance(model, dict)), None)
        if odd is not None:
            raise InputFileError(
                f"{file}: models must be [[models]] tables. Found a {type(odd).__name__}."
            )
        defaults = {key: value for key, value in document.items() if key != "models"}
        return [
            _entry({**defaults, **model}, base, f"{file} model {index + 1}")
            for index, model in enumerate(models)
        ]
    rows = _csv_rows(file, text)
    if not rows:
        raise InputFileError(f"{file}: the manifest lists no models. Found 0 rows.")
    return [_entry(row, base, f"{file} row {number}") for number, row in rows]
