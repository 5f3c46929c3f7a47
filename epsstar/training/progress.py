"""Progress on standard error, one display for every command that shows it.

:func:`progress_display` is a rich progress display with the columns every bar shares:
what is counted, the bar, how many are done (of how many when that is known, never a
``?``), a status, the time elapsed and the time left. It is drawn on a terminal only;
elsewhere (a log file, a CI job) it still keeps its tasks' counts and rates, so that a
command can print a plain line where a bar would move, the time left read by
:func:`time_left` from the same task. It lives here, the lowest layer that shows progress,
so that the trainer's bar over epochs (:class:`EpochProgress`) and the command line's
bars (:mod:`epsstar.cli.common.progress`, ``epsstar demo``) are drawn alike.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import TYPE_CHECKING

from epsstar.training.results import EpochStats

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, Task, TaskID

__all__ = ["EpochProgress", "announce", "progress_display", "time_left"]


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


def announce(text: str, enabled: bool | None = None) -> None:
    """Print one line saying what happens next (``enabled=False``: nothing)."""
    if enabled is not False:
        print(text, file=sys.stderr, flush=True)


class EpochProgress:
    """Context manager over the epochs of one run, with the training loss and the ε spent
    so far; pass :meth:`update` as the trainer's ``on_epoch`` callback.

    ``enabled=None`` shows a bar on a terminal and a line per epoch otherwise;
    ``True`` always a bar; ``False`` nothing.
    """

    def __init__(self, description: str, epochs: int, *, enabled: bool | None = None) -> None:
        self._enabled = sys.stderr.isatty() if enabled is None else enabled
        self._lines = enabled is None and not self._enabled
        self._description = description
        self._epochs = epochs
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> EpochProgress:
        if self._enabled:
            from rich.console import Console

            self._progress = progress_display(Console(stderr=True, force_terminal=True))
            self._progress.start()
            self._task = self._progress.add_task(
                self._description, total=self._epochs, unit="epochs", status="loss -  ε -"
            )
        return self

    def update(self, stats: EpochStats) -> None:
        epsilon = "-" if stats.epsilon is None else f"{stats.epsilon:.3f}"
        if self._lines:
            print(
                f"{self._description}: epoch {stats.epoch}/{stats.epochs}  loss {stats.loss:.4f}"
                f"  ε {epsilon}  {stats.seconds:.1f} s",
                file=sys.stderr,
                flush=True,
            )
        if self._progress is None or self._task is None:
            return
        self._progress.update(
            self._task, completed=stats.epoch, status=f"loss {stats.loss:.4f}  ε {epsilon}"
        )

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
