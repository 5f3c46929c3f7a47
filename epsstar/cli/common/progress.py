"""The progress bar of an audit's tables, drawn by the one progress display
(:func:`epsstar.training.progress.progress_display`).

:func:`audit_progress` gives an :class:`epsstar.audit.data.progress.Progress` for
:func:`epsstar.audit.audit`, or ``None`` when the bar is off (``--quiet``): one task per
table, of its rows when the audit knows them before reading, else a count of rows beside
the file's size (a CSV file is not read twice to count its rows).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

from epsstar.training.progress import progress_display

__all__ = ["RichAuditProgress", "audit_progress"]


class RichAuditProgress:
    """One task per table (``train rows``, ``population rows``), advanced by batch: of the
    rows to come when known, else a count with the file's size."""

    def __init__(self, display: Progress) -> None:
        self._display = display
        self._task: TaskID | None = None

    def start(self, role: str, path: Path, rows: int | None) -> None:
        from rich.filesize import decimal

        status = ""
        if rows is None and path.is_file():
            status = f"of a {decimal(path.stat().st_size)} file"
        self._task = self._display.add_task(f"{role}", total=rows, unit="rows", status=status)

    def advance(self, rows: int) -> None:
        assert self._task is not None  # started by the engine before its first batch
        self._display.advance(self._task, rows)


@contextmanager
def audit_progress(enabled: bool) -> Iterator[RichAuditProgress | None]:
    """A running bar for the audit's tables while the block runs, or ``None`` if disabled."""
    if not enabled:
        yield None
        return
    with progress_display() as display:
        yield RichAuditProgress(display)
