"""The ``audit-many`` manifest: one model to audit per CSV row or ``[[models]]`` TOML table.

Columns: ``model``, ``train`` (or ``train_data``), ``population`` (or ``population_data``),
``label_column``, ``strategy`` and ``repeat``, optionally ``features`` and ``class_labels``
(comma-separated),
``loader`` and ``outputs``. A language model's folder audited on text records has a
``text_column`` instead of a ``label_column`` (an empty CSV cell counts as absent, so one
manifest may list both kinds). In TOML, top-level keys are defaults for every model. Any other
column is a hyper-parameter of the strategy and is carried into the results (``epsstar
sweep``'s manifest is one such file). Relative paths are relative to the manifest's folder.
"""

from __future__ import annotations

import csv
import dataclasses
import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

from epsstar.audit.inputs.served import is_url, shown_url
from epsstar.exceptions import InputFileError
from epsstar.plumbing.files.input_bounds import read_text
from epsstar.plumbing.files.schema import (
    Anything,
    Cell,
    CellValue,
    Integer,
    ListOf,
    Nullable,
    OneOf,
    Table,
    Text,
    Where,
    parse_toml,
)
from epsstar.plumbing.records.json_records import JsonRecord, json_rule
from epsstar.statistics.names import OUTPUT_KINDS, OutputKind

__all__ = [
    "CELL",
    "ENTRY",
    "MAX_MODELS",
    "PARAMS",
    "HyperParameters",
    "ManifestEntry",
    "read_manifest",
]

_ALIASES = {"train_data": "train", "population_data": "population", "path": "model"}
#: The most models one manifest may list.
MAX_MODELS = 100_000
_PATH = Text()
_NAME = Text(max_length=1024)
#: A hyper-parameter's value: what a table cell can hold.
CELL = Cell()
#: A strategy's hyper-parameters, by name.
HyperParameters: TypeAlias = Mapping[str, CellValue]
#: One model's fields (after the aliases); any other key is a hyper-parameter of its
#: strategy, which must be a table cell's value.
ENTRY = Table(
    {
        "model": _PATH,
        "train": _PATH,
        "population": _PATH,
        "label_column": _NAME,
        "text_column": _NAME,
        "strategy": _NAME,
        "repeat": Integer(0, 10**9),
        "features": Nullable(ListOf(_NAME, min_items=1, max_items=1_000_000)),
        "class_labels": Nullable(ListOf(_NAME, min_items=1, max_items=1_000_000)),
        "loader": Nullable(_NAME),
        "outputs": Nullable(OneOf(OUTPUT_KINDS)),
    },
    required=("model", "train", "population", "label_column"),
    extra=CELL,
)
#: A language model's fields: a ``text_column`` instead of the ``label_column``.
TEXT_ENTRY = dataclasses.replace(ENTRY, required=("model", "train", "population", "text_column"))
#: The ``params`` of an entry as the results record them (:class:`ManifestEntry`'s JSON).
PARAMS = Table({}, extra=CELL)
#: A TOML manifest: its ``[[models]]`` and, at the top, defaults for every model.
MODELS = ListOf(Table({}, extra=Anything()), min_items=1, max_items=MAX_MODELS)


_SKIP = json_rule(skip=True)


@dataclass(frozen=True, slots=True)
class ManifestEntry(JsonRecord):
    """One model to audit and the strategy it belongs to; its JSON (``entry`` in the
    results) names the model, the data, the strategy and the hyper-parameters."""

    model: Path
    train: Path
    population: Path
    #: The label column of a classifier's tables (``None``: a language model's entry).
    label_column: str | None = field(metadata=json_rule(omit_if_none=True))
    strategy: str
    repeat: int
    features: tuple[str, ...] | None = field(default=None, metadata=_SKIP)
    #: The class labels of the model's outputs, in order (``--class-labels``).
    class_labels: tuple[str, ...] | None = field(default=None, metadata=_SKIP)
    loader: str | None = field(default=None, metadata=_SKIP)
    outputs: OutputKind | None = field(default=None, metadata=_SKIP)
    params: Mapping[str, Any] = field(default_factory=dict)
    #: The column of text of a language model's records (``None``: a classifier's entry).
    text_column: str | None = field(default=None, metadata=json_rule(omit_if_none=True))


#: The keys of a classifier's entry that a language model's entry does not take.
_TABLE_ONLY = ("label_column", "features", "class_labels", "outputs")


def _kind_checked(row: dict[str, object], where: Where) -> None:
    """Drop the empty CSV cells of the columns that say an entry's kind, and refuse a text
    entry with a classifier's keys."""
    for key in ("text_column", *_TABLE_ONLY):
        if where.text_cells and row.get(key) == "":
            del row[key]
    if "text_column" not in row:
        return
    given = [key for key in _TABLE_ONLY if key in row]
    if given:
        raise InputFileError(
            f"{where.source}: a language model's entry (text_column) reads text records, "
            f"without a classifier's {', '.join(given)}. Found {given[0]} {row[given[0]]!r}."
        )


def _entry(raw: Mapping[str, object], base: Path, where: Where) -> ManifestEntry:
    """One model's entry, every field checked by :data:`ENTRY` (paths against ``base``)."""
    row = {_ALIASES.get(key, key): value for key, value in raw.items()}
    _kind_checked(row, where)
    if is_url(row.get("model")):
        raise InputFileError(
            f"{where.source}: audit-many audits model files; a served model is audited one at "
            f"a time (epsstar audit URL). Found the URL {shown_url(str(row['model']))!r}."
        )
    for listed in ("features", "class_labels"):
        if isinstance(row.get(listed), str) and not where.text_cells:
            row[listed] = [name.strip() for name in str(row[listed]).split(",")]
    fields = (TEXT_ENTRY if "text_column" in row else ENTRY).check(row, where)

    def path(key: str) -> Path:
        value = Path(fields.need(key, _PATH))
        return value if value.is_absolute() else base / value

    model = path("model")
    return ManifestEntry(
        model=model,
        train=path("train"),
        population=path("population"),
        label_column=fields.get("label_column", _NAME),
        strategy=fields.get("strategy", _NAME) or model.stem,
        repeat=fields.get("repeat", ENTRY.fields["repeat"]) or 0,
        features=fields.get("features", ENTRY.fields["features"]) or None,
        class_labels=fields.get("class_labels", ENTRY.fields["class_labels"]) or None,
        loader=fields.get("loader", ENTRY.fields["loader"]),
        outputs=fields.get("outputs", ENTRY.fields["outputs"]),
        params=fields.extras(CELL),
        text_column=fields.get("text_column", _NAME),
    )


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
    text = read_text(file, "a manifest")
    if suffix == ".toml":
        return _toml_entries(file, text, base)
    rows = _csv_rows(file, text)
    if not rows:
        raise InputFileError(f"{file}: the manifest lists no models. Found 0 rows.")
    if len(rows) > MAX_MODELS:
        raise InputFileError(
            f"{file}: a manifest may list at most {MAX_MODELS:,} models. Found {len(rows):,}."
        )
    return [
        _entry(row, base, Where(f"{file} row {number}", text_cells=True)) for number, row in rows
    ]


def _toml_entries(file: Path, text: str, base: Path) -> list[ManifestEntry]:
    """The ``[[models]]`` of a TOML manifest, each with the top level's defaults."""
    document = parse_toml(text, Where(str(file)))
    if not isinstance(document, dict) or "models" not in document:
        raise InputFileError(f"{file}: expected one or more [[models]] tables. Found none.")
    models = MODELS.check(document["models"], Where(str(file), "models"))
    defaults = {key: value for key, value in document.items() if key != "models"}
    return [
        _entry(
            {**defaults, **model.values, **model.extra}, base, Where(f"{file} model {index + 1}")
        )
        for index, model in enumerate(models)
    ]
