"""What every format's reader shares: the schema and batch records, the bound on
columns, and the wording of the values and errors its refusals quote."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from numpy.typing import NDArray

from epsstar.audit.model.features import Features
from epsstar.exceptions import InputFileError

_SHOWN = 10  # columns or labels quoted in a message before "..."
MAX_COLUMNS = 1_000_000
"""The most columns a data file may have (a header can announce any number)."""


@dataclass(frozen=True, slots=True)
class TableSchema:
    """What a data file holds, read without scanning its rows where the format allows.

    ``n_rows`` is ``None`` for CSV, whose length is unknown until it is read;
    ``separator`` is the CSV field separator (unused by the other formats) and
    ``csv_index`` says that the CSV file's first field, unnamed, is a pandas index left out
    of ``columns``; ``unnamed`` are the columns whose names the reader made up because the
    file records none (``x0``, ``x1``, … of an NPZ ``X``; an NPY array's ``0``, ``1``, …).
    """

    path: Path
    format: str
    columns: tuple[str, ...]
    n_rows: int | None
    separator: str = ","
    csv_index: bool = False
    unnamed: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Batch:
    """Consecutive rows of a table.

    ``features`` are the selected columns, typed as stored (see the module docstring);
    ``labels`` is ``(b,)`` as read.
    """

    features: Features
    labels: NDArray[Any]

    def __len__(self) -> int:
        return int(self.labels.shape[0])


def _clipped(value: object, width: int = 60) -> str:
    """``repr(value)``, cut to ``width`` characters (a field can be megabytes long)."""
    text = repr(value)
    return text if len(text) <= width else f"{text[: width - 14]}... ({len(text)} chars)"


def _shown(items: Sequence[object], limit: int = _SHOWN) -> str:
    text = ", ".join(_clipped(item) for item in items[:limit])
    return text + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _unreadable(path: Path, kind: str, error: BaseException) -> InputFileError:
    name = {"csv": "CSV", "parquet": "Parquet", "npz": ".npz", "npy": ".npy"}[kind]
    return InputFileError(f"{path}: must be a readable {name} file. Found: {_first_line(error)}.")


def _check_unique(path: Path, names: Sequence[str]) -> None:
    counts = Counter(names)
    repeated = [name for name, count in counts.items() if count > 1]
    if repeated:
        raise InputFileError(
            f"{path}: column names must be unique. Found {_shown(repeated)} more than once."
        )
