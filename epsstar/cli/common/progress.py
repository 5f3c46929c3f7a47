"""The progress bar of ``epsstar audit``: rich, on standard error, one task per table.

:func:`audit_progress` gives an :class:`epsstar.audit.data.progress.Progress` for
:func:`epsstar.audit.audit`, or ``None`` when the bar is off (``--quiet``). The bar is
drawn only on a terminal; only then are a table's rows counted for its total, as
counting can mean reading a CSV file once more.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["RichAuditProgress", "audit_progress"]


class RichAuditProgress:
    """One rich task per table (``train rows``, ``population rows``), advanced by batch."""

    def __init__(self, bar: Any, *, count_totals: bool) -> None:
        self._bar = bar
        self._count_totals = count_totals
        self._task: Any = None

    def start(self, role: str, path: Path) -> None:
        from epsstar.audit.data.tables import count_rows
        from epsstar.exceptions import InputFileError

        total = None
        if self._count_totals:
            try:
                total = count_rows(path)
            except InputFileError:  # a CSV with another separator: the reading says so
                total = None
        self._task = self._bar.add_task(f"{role} rows", total=total)

    def advance(self, rows: int) -> None:
        self._bar.advance(self._task, rows)


@contextmanager
def audit_progress(enabled: bool) -> Iterator[RichAuditProgress | None]:
    """A running bar for the audit's tables while the block runs, or ``None`` if disabled."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not console.is_terminal,
    )
    if not console.is_terminal:  # nothing is drawn: rich 13.3's stop() would print an empty line
        yield RichAuditProgress(bar, count_totals=False)
        return
    with bar:
        yield RichAuditProgress(bar, count_totals=True)
