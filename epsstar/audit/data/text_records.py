"""Text records for the audit of a language model: what to read and how it is read.

:class:`TextTables` names the two data sets and the column of text: CSV, Parquet or JSON
Lines files with a text column (``--text-column``), or ``.txt`` files with one record per
line (the column name does not apply to them). Each data set is first scanned
(:func:`scan_text`): every record must be text and not empty or blank (all the empty ones
are named by their 0-based row, a ``.txt`` file's by their line too), a column of numbers is
refused, and each record's hash is kept for the check that no population record is also a
training record. The audit then streams the records in chunks (:func:`iter_text_chunks`),
so that memory does not grow with the corpus: Parquet one row group's batches at a time,
CSV in pandas chunks, JSON Lines and ``.txt`` line by line. :func:`read_rows` fetches a
few records again by row, for the report's excerpts.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from epsstar.audit.data.checks import MAX_SHARED_FRACTION, TableScan, shared_rows
from epsstar.audit.data.extraction_settings import ExtractionSettings
from epsstar.exceptions import InputFileError, InsufficientDataError, InvalidInputError
from epsstar.plumbing.files.json_parsing import parse_json
from epsstar.plumbing.records.constraints import (
    ColumnName,
    Maybe,
    WholeNumber,
    check_fields,
    constraint,
)

__all__ = [
    "DEFAULT_TEXT_BATCH",
    "TEXT_CHUNK_ROWS",
    "TEXT_SUFFIXES",
    "TextChunk",
    "TextScan",
    "TextTables",
    "iter_text_chunks",
    "read_rows",
    "scan_text",
    "shared_text_warning",
]

TextFormat = Literal["csv", "parquet", "jsonl", "txt"]
Role = Literal["train", "population"]

TEXT_SUFFIXES: Final[dict[str, TextFormat]] = {
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".txt": "txt",
}
#: Most records per model call (longer ones are further limited by a token budget).
DEFAULT_TEXT_BATCH: Final = 64
#: Records read, tokenised and sorted by length together.
TEXT_CHUNK_ROWS: Final = 1024
_SHOWN = 10
_NUMBER = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*")


@dataclass(frozen=True, slots=True)
class TextTables:
    """What a text audit reads, checked when built: the training and population files and
    the column of text in them (``None``: both are ``.txt`` files); ``batch_size`` records
    at most per model call; ``record_text=False`` keeps the records' text out of the result;
    ``extraction`` what the extraction test asks (``None``: no extraction test)."""

    train: str | os.PathLike[str]
    population: str | os.PathLike[str]
    text_column: str | None = field(default=None, metadata=constraint(Maybe(ColumnName())))
    batch_size: int = field(default=DEFAULT_TEXT_BATCH, metadata=constraint(WholeNumber()))
    record_text: bool = True
    extraction: ExtractionSettings | None = None

    def __post_init__(self) -> None:
        check_fields(self)
        for role in ("train", "population"):
            path = self.path(role)
            kind = _format(path, role)
            if kind != "txt" and self.text_column is None:
                raise InvalidInputError(
                    f"{role}: a {kind} file needs the column of text (--text-column); only "
                    f".txt files hold one record per line. Found {str(path)!r}."
                )

    def source(self, role: Role) -> str:
        """The data set of ``role`` as given."""
        return os.fspath(self.train if role == "train" else self.population)

    def path(self, role: Role) -> Path:
        return Path(self.source(role))


@dataclass(frozen=True, slots=True)
class TextScan:
    """One data set scanned: its number of records, each record's hash and the characters
    in all."""

    rows: int
    hashes: NDArray[np.uint64] = field(repr=False)
    characters: int


@dataclass(frozen=True, slots=True)
class TextChunk:
    """Consecutive records; ``first_row`` is the 0-based row of the first."""

    first_row: int
    texts: tuple[str, ...]


def _format(path: Path, role: str) -> TextFormat:
    kind = TEXT_SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise InputFileError(
            f"{role}: text records must be in a file ending in one of "
            f"{', '.join(TEXT_SUFFIXES)}. Found {str(path)!r}."
        )
    if path.is_dir():
        raise InputFileError(f"{role}: must be a file, not a directory. Found {str(path)!r}.")
    if not path.is_file():
        raise InputFileError(f"{role}: no such file. Found {str(path)!r}.")
    return kind


def _clipped(value: object, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else f"{text[: width - 14]}... ({len(text)} chars)"


def _unreadable(path: Path, kind: str, error: BaseException) -> InputFileError:
    first = (str(error).strip().splitlines() or [type(error).__name__])[0]
    return InputFileError(f"{path}: must be a readable {kind} file. Found: {first}.")


def _txt_values(path: Path, size: int) -> Iterator[list[object]]:
    try:
        with path.open(encoding="utf-8-sig", newline=None) as stream:
            batch: list[object] = []
            for line in stream:
                batch.append(line.removesuffix("\n"))
                if len(batch) == size:
                    yield batch
                    batch = []
            if batch:
                yield batch
    except UnicodeDecodeError as error:
        byte = error.object[error.start : error.start + 1].hex() or "?"
        raise InputFileError(f"{path}: must be UTF-8 text. Found the byte 0x{byte}.") from None


def _jsonl_values(path: Path, column: str, size: int) -> Iterator[list[object]]:
    batch: list[object] = []
    row = 0
    try:
        with path.open(encoding="utf-8-sig") as stream:
            for number, line in enumerate(stream, 1):
                if not line.strip():
                    continue
                record = parse_json(line, str(path), line=number)
                if not isinstance(record, dict) or column not in record:
                    raise InputFileError(
                        f"{path}: every line must be a JSON object with the key {column!r} "
                        f"(--text-column). Found {_clipped(line.strip())} on line {number} "
                        f"(row {row})."
                    )
                batch.append(record[column])
                row += 1
                if len(batch) == size:
                    yield batch
                    batch = []
    except UnicodeDecodeError as error:
        byte = error.object[error.start : error.start + 1].hex() or "?"
        raise InputFileError(f"{path}: must be UTF-8 text. Found the byte 0x{byte}.") from None
    if batch:
        yield batch


def _csv_values(path: Path, column: str, size: int) -> Iterator[list[object]]:
    try:
        header = pd.read_csv(path, nrows=0)
    except pd.errors.EmptyDataError:
        raise InsufficientDataError(
            f"{path}: must hold a header line and rows. Found an empty file."
        ) from None
    except (pd.errors.ParserError, OSError, ValueError) as error:
        raise _unreadable(path, "CSV", error) from None
    _check_column(path, column, [str(name) for name in header.columns])
    try:
        with pd.read_csv(
            path, usecols=[column], dtype=str, keep_default_na=False, chunksize=size
        ) as reader:
            for frame in reader:
                yield frame[column].tolist()
    except (pd.errors.ParserError, OSError, ValueError) as error:
        raise _unreadable(path, "CSV", error) from None


def _parquet_values(path: Path, column: str, size: int) -> Iterator[list[object]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path, buffer_size=1 << 18, pre_buffer=False)
    except (pa.ArrowException, OSError) as error:
        raise _unreadable(path, "Parquet", error) from None
    with parquet:
        schema = parquet.schema_arrow
        _check_column(path, column, list(schema.names))
        kind = schema.field(column).type
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            what = (
                "numbers" if pa.types.is_integer(kind) or pa.types.is_floating(kind) else "no text"
            )
            raise InvalidInputError(
                f"{path}: the text column {column!r} must hold text. Found {what} (type {kind})."
            )
        try:
            for batch in parquet.iter_batches(batch_size=size, columns=[column]):
                yield batch.column(0).to_pylist()
        except (pa.ArrowException, OSError) as error:
            raise _unreadable(path, "Parquet", error) from None


def _check_column(path: Path, column: str, names: Sequence[str]) -> None:
    if column not in names:
        shown = ", ".join(repr(name) for name in names[:_SHOWN])
        more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
        raise InvalidInputError(
            f"{path}: the text column (--text-column) must be one of its columns: "
            f"{shown}{more}. Found {column!r}."
        )


def _values(path: Path, column: str | None, size: int) -> Iterator[list[object]]:
    """The raw values of the text column (of each line of a ``.txt`` file), in chunks."""
    kind = _format(path, "data file")
    if kind == "txt":
        return _txt_values(path, size)
    assert column is not None  # TextTables refuses a table without a text column
    if kind == "jsonl":
        return _jsonl_values(path, column, size)
    if kind == "csv":
        return _csv_values(path, column, size)
    return _parquet_values(path, column, size)


def _where(path: Path, row: int) -> str:
    return f"row {row} (line {row + 1})" if path.suffix.lower() == ".txt" else f"row {row}"


def _checked(path: Path, column: str | None, values: list[object], row0: int) -> list[str]:
    """The chunk's values, each checked to be a string (a number is refused)."""
    for offset, value in enumerate(values):
        if value is None or isinstance(value, str):
            continue
        what = "a number" if isinstance(value, (int, float)) else type(value).__name__
        raise InvalidInputError(
            f"{path}: the text column {column!r} must hold text. Found {what}, "
            f"{_clipped(value)}, at {_where(path, row0 + offset)}."
        )
    return ["" if value is None else str(value) for value in values]


def _refuse_empty(path: Path, empty: list[int], total: int) -> None:
    if not empty:
        return
    shown = ", ".join(_where(path, row) for row in empty[:_SHOWN])
    more = f" and {len(empty) - _SHOWN} more" if len(empty) > _SHOWN else ""
    raise InvalidInputError(
        f"{path}: every text record must hold text; remove the empty ones. Found "
        f"{len(empty):,} empty or blank record(s) of {total:,}: {shown}{more}."
    )


def scan_text(path: Path, column: str | None, *, chunk_rows: int = 1 << 16) -> TextScan:
    """Read every record of ``path`` once: refuse records that are not text, a column of
    numbers and empty or blank records (naming them all), and hash each record."""
    empty: list[int] = []
    hashes: list[NDArray[np.uint64]] = []
    rows = characters = 0
    all_numbers = True
    for values in _values(path, column, chunk_rows):
        texts = _checked(path, column, values, rows)
        empty += [rows + i for i, text in enumerate(texts) if not text.strip()]
        all_numbers = all_numbers and all(_NUMBER.fullmatch(t) for t in texts if t.strip())
        hashes.append(np.asarray(pd.util.hash_array(np.asarray(texts, dtype=object))))
        characters += sum(len(text) for text in texts)
        rows += len(texts)
    if rows == 0:
        raise InsufficientDataError(f"{path}: must hold at least one text record. Found none.")
    if all_numbers and len(empty) < rows:
        raise InvalidInputError(
            f"{path}: the text column {column!r} must hold text. Found only numbers "
            f"(such as {_first_value(path, column)!r})."
        )
    _refuse_empty(path, empty, rows)
    return TextScan(rows, np.concatenate(hashes).astype(np.uint64), characters)


def _first_value(path: Path, column: str | None) -> str:
    for values in _values(path, column, 16):
        for value in values:
            if isinstance(value, str) and value.strip():
                return value
    return ""


def iter_text_chunks(
    path: Path, column: str | None, *, chunk_rows: int = TEXT_CHUNK_ROWS
) -> Iterator[TextChunk]:
    """The records of ``path`` (scanned already by :func:`scan_text`) in chunks."""
    row = 0
    for values in _values(path, column, chunk_rows):
        texts = tuple(_checked(path, column, values, row))
        yield TextChunk(row, texts)
        row += len(texts)


def read_rows(path: Path, column: str | None, rows: Iterable[int]) -> dict[int, str]:
    """The records at the 0-based ``rows`` of ``path`` (one pass over the file)."""
    wanted = set(rows)
    found: dict[int, str] = {}
    if not wanted:
        return found
    last = max(wanted)
    for chunk in iter_text_chunks(path, column, chunk_rows=1 << 14):
        for offset, text in enumerate(chunk.texts):
            if chunk.first_row + offset in wanted:
                found[chunk.first_row + offset] = text
        if chunk.first_row + len(chunk.texts) > last:
            break
    return found


def shared_text_warning(train: TextScan, population: TextScan) -> tuple[int, str | None]:
    """How many population records also occur (verbatim) among the training records, and
    the warning when more than :data:`MAX_SHARED_FRACTION` of them do (members among the
    non-members bias Epsilon* towards 0, :mod:`epsstar.audit.data.checks`)."""
    no_classes = np.zeros(1, dtype=np.int64)
    shared = shared_rows(
        TableScan(train.hashes, no_classes), TableScan(population.hashes, no_classes)
    )
    fraction = shared / population.rows
    if fraction <= MAX_SHARED_FRACTION:
        return shared, None
    return shared, (
        f"{shared:,} of the {population.rows:,} population records ({fraction:.1%}) also "
        f"occur verbatim in the training data (more than {MAX_SHARED_FRACTION:.0%}): members "
        f"among the non-members bias Epsilon* towards 0 (to at most about "
        f"ln(1/{fraction:.3g}) = {np.log(1.0 / fraction):.2f})"
    )
