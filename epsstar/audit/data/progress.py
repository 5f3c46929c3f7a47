"""What is told as a table is read: the protocol of a progress display."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

__all__ = ["Progress"]


@runtime_checkable
class Progress(Protocol):
    """Told when a table starts streaming and how many rows each batch held."""

    def start(self, role: str, path: Path, rows: int | None) -> None:
        """A table starts: ``role`` is ``"train"`` or ``"population"``; ``rows`` is how many
        rows will stream when that is known before reading (from a Parquet, NPZ or NPY
        file's metadata, or the count of text records), else ``None`` (a CSV file)."""
        ...

    def advance(self, rows: int) -> None:
        """``rows`` more rows of the current table went through the model."""
        ...
