"""Progress on standard error, one way for every command that shows it.

:func:`progress_display` is a rich progress display with the columns every bar shares:
what is counted, the bar, how many are done (of how many when that is known, never a
``?``), a status, the time elapsed and the time left. It is drawn on a terminal only;
elsewhere (a log file, a CI job) it still keeps its tasks' counts and rates, so that a
command can print a plain line where a bar would move, the time left read by
:func:`time_left` from the same task. :func:`audit_progress` is the bar of an audit's tables.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, Task, TaskID

__all__ = ["RichAuditProgress", "audit_progress", "progress_display", "time_left"]


def _count(task: Task) -> str:
    """``done/total unit``, ``done unit`` without a total, or the task's own ``count`` text."""
    shown = task.fields.get("count")
    if shown is not None:
        return str(shown)
    unit = task.fields.get("unit", "")
    done = f"{int(task.completed):,}"
    counted = done if task.total is None else f"{done}/{int(task.total):,}"
    return f"{counted} {unit}".rstrip()


def progress_display(console: Console | None = None) -> Progress:
    """A progress display on ``console`` (standard error by default), drawn only on a terminal.

    A task's fields: ``unit`` (what is counted, e.g. ``rows``), ``count`` (a text shown
    instead of the count) and ``status`` (shown after it).
    """
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class CountColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            return Text(_count(task), style="progress.download")

    class StatusColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            return Text(str(task.fields.get("status", "")))

    shown_on = console or Console(stderr=True)
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        CountColumn(),
        StatusColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=shown_on,
        disable=not shown_on.is_terminal,
    )


def time_left(display: Progress, task: TaskID) -> str | None:
    """The time left of ``task`` as the bar shows it (``1:02:03``), or None before it is known."""
    from rich.progress import TimeRemainingColumn

    found = next(t for t in display.tasks if t.id == task)
    if found.total is None or found.time_remaining is None:
        return None
    return TimeRemainingColumn().render(found).plain


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
