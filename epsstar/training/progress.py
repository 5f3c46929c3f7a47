"""Progress over epochs, with the training loss and the ε spent so far, on standard error.

A rich progress bar when standard error is a terminal, one plain line per epoch
otherwise (a log file, a CI job); nothing when the user asked for quiet output.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any

from epsstar.training.results import EpochStats

__all__ = ["EpochProgress", "announce"]


def announce(text: str, enabled: bool | None = None) -> None:
    """Print one line saying what happens next (``enabled=False``: nothing)."""
    if enabled is not False:
        print(text, file=sys.stderr, flush=True)


class EpochProgress:
    """Context manager; pass :meth:`update` as the trainer's ``on_epoch`` callback.

    ``enabled=None`` shows a bar on a terminal and a line per epoch otherwise;
    ``True`` always a bar; ``False`` nothing.
    """

    def __init__(self, description: str, epochs: int, *, enabled: bool | None = None) -> None:
        self._enabled = sys.stderr.isatty() if enabled is None else enabled
        self._lines = enabled is None and not self._enabled
        self._description = description
        self._epochs = epochs
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> EpochProgress:
        if self._enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("epochs  loss {task.fields[loss]}  ε {task.fields[epsilon]}"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self._progress.__enter__()
            self._task = self._progress.add_task(
                self._description, total=self._epochs, loss="-", epsilon="-"
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
        if self._progress is None:
            return
        self._progress.update(
            self._task, completed=stats.epoch, loss=f"{stats.loss:.4f}", epsilon=epsilon
        )

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.__exit__(kind, value, traceback)
            self._progress = None
