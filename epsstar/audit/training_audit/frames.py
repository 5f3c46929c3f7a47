"""The tables of an audit of a training procedure, whole in memory: read, checked, combined with
the included canaries and written for a run.

The procedure under audit trains on a table of the same format and columns as ``--train`` (CSV
or Parquet; JSON Lines too for the text records of a language model, one JSON object per line,
a row's empty values left out of its object): the training rows and the canaries included in
the run, shuffled with the run's seed so that no row's position says whether it is a canary.
Rows are compared by a hash of the columns the model may see (:func:`row_hashes`): a
population record that is also a training record, or that occurs twice, cannot serve as a
canary (it would be trained on whatever its inclusion bit says).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from epsstar.audit.data.tables.csv_files import csv_float_precision
from epsstar.audit.data.tables.formats import read_schema
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.plumbing.files.json_parsing import parse_json
from epsstar.plumbing.files.staging import atomic_write_bytes

__all__ = [
    "TABLE_FORMATS",
    "TEXT_TABLE_FORMATS",
    "check_columns",
    "combine",
    "read_frame",
    "row_hashes",
    "write_frame",
]

#: The table formats a procedure is handed, by suffix.
TABLE_FORMATS: Final = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
#: The formats of text records besides those (``--text-column``).
TEXT_TABLE_FORMATS: Final = {**TABLE_FORMATS, ".jsonl": "jsonl", ".ndjson": "jsonl"}


def _jsonl_frame(file: Path) -> pd.DataFrame:
    """The JSON Lines file ``file``, one row per object (blank lines skipped)."""
    rows = []
    with file.open(encoding="utf-8-sig") as stream:
        for number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            record = parse_json(line, str(file), line=number)
            if not isinstance(record, dict):
                raise InputFileError(
                    f"{file}: every line must be a JSON object. Found another value on line "
                    f"{number}."
                )
            rows.append(record)
    return pd.DataFrame(rows)


def _jsonl_bytes(frame: pd.DataFrame) -> bytes:
    """``frame`` as JSON Lines, each row's missing values left out of its object."""
    lines = []
    for row in frame.to_dict(orient="records"):
        kept = {
            str(key): value.item() if isinstance(value, np.generic) else value
            for key, value in row.items()
            if not (value is None or (isinstance(value, float) and math.isnan(value)))
        }
        lines.append(json.dumps(kept, ensure_ascii=False) + "\n")
    return "".join(lines).encode("utf-8")


def read_frame(
    path: str | os.PathLike[str], option: str, *, allow_empty: bool = False, text: bool = False
) -> pd.DataFrame:
    """The table at ``path`` (CSV, Parquet or JSON Lines), whole; ``option`` names it in
    errors. A table without rows is refused unless ``allow_empty`` (the canaries-only sample
    of ``--train-records 0``). With ``text`` (text records), a CSV file's cells are read as
    the text they hold, as the text audit reads them (``NA`` stays ``NA``)."""
    file = Path(path)
    kind = TEXT_TABLE_FORMATS.get(file.suffix.lower())
    if kind == "jsonl":
        if not file.is_file():
            raise InputFileError(f"{option}: no such file. Found {str(file)!r}.")
        try:
            frame = _jsonl_frame(file)
        except (OSError, UnicodeDecodeError) as error:
            raise InputFileError(f"{option}: cannot read {str(file)!r}: {error}.") from None
        if frame.empty and not allow_empty:
            raise InputFileError(f"{option}: the table has no rows. Found {str(file)!r}.")
        return frame
    if kind is None:
        allowed = ", ".join(TEXT_TABLE_FORMATS)
        raise InputFileError(
            f"{option}: the table must be CSV, Parquet or JSON Lines (ending in {allowed}), "
            f"the format the procedure under audit is handed. Found {str(file)!r}."
        )
    try:
        read_schema(file)
    except InputFileError as error:
        raise InputFileError(f"{option}: {error}") from None
    try:
        # The numbers the audit reads from the same file (its canaries are matched byte for byte)
        frame = (
            pd.read_csv(file, dtype=str, keep_default_na=False)
            if kind == "csv" and text
            else pd.read_csv(file, float_precision=csv_float_precision())
            if kind == "csv"
            else pd.read_parquet(file)
        )
    except (OSError, ValueError, pd.errors.ParserError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise InputFileError(f"{option}: cannot read {str(file)!r}: {reason}.") from None
    if frame.empty and not allow_empty:
        raise InputFileError(f"{option}: the table has no rows. Found {str(file)!r}.")
    return frame


def check_columns(
    frame: pd.DataFrame, option: str, label_column: str, features: Sequence[str] | None
) -> None:
    """Refuse a table without the label column or a named feature column."""
    columns = [str(name) for name in frame.columns]
    for name, role in [
        (label_column, "--label-column"),
        *((f, "--features") for f in features or ()),
    ]:
        if name not in columns:
            shown = ", ".join(repr(c) for c in columns[:8]) + (" ..." if len(columns) > 8 else "")
            raise InvalidInputError(
                f"{option}: the table has no column {name!r} (named by {role}). "
                f"Found columns {shown}."
            )


def row_hashes(frame: pd.DataFrame, columns: Sequence[str]) -> NDArray[np.uint64]:
    """One 64-bit hash per row of ``columns`` (pandas' stable row hash, index left out)."""
    hashed = pd.util.hash_pandas_object(frame[list(columns)], index=False)
    return np.asarray(hashed, dtype=np.uint64)


def combine(train: pd.DataFrame, canaries: Sequence[pd.DataFrame], seed: int) -> pd.DataFrame:
    """``train``'s rows and every canary frame's, shuffled with ``seed``, in ``train``'s columns."""
    parts = [frame[train.columns] for frame in (train, *canaries) if len(frame)]
    table = pd.concat(parts or [train], ignore_index=True)
    order = np.random.default_rng(seed).permutation(len(table))
    return table.iloc[order].reset_index(drop=True)


def write_frame(frame: pd.DataFrame, path: Path) -> Path:
    """Write ``frame`` in the format of ``path``'s suffix (CSV without the index), all at once
    (:func:`~epsstar.plumbing.files.staging.atomic_write_bytes`: a file in the way is
    replaced, never written through, and a folder that refuses it is one line)."""
    kind = TEXT_TABLE_FORMATS[path.suffix.lower()]
    if kind == "jsonl":
        data = _jsonl_bytes(frame)
    elif kind == "csv":
        data = frame.to_csv(index=False).encode("utf-8")
    else:
        data = frame.to_parquet(index=False)
    atomic_write_bytes(path, data)
    return path
