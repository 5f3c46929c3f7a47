"""A CLI child process that a test interrupts as a terminal would (Ctrl-C)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def default_sigint() -> None:
    """In the child: Ctrl-C as on a terminal, even when the tests run where SIGINT is
    ignored (a background job of a non-interactive shell), which the child would inherit."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cli_process(code: str, args: list[str], *, new_session: bool = False) -> subprocess.Popen[str]:
    """``python -c code args`` with the checkout importable, its output piped and Ctrl-C
    at its default; ``new_session`` makes it lead its own process group (for ``killpg``)."""
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=default_sigint,
        start_new_session=new_session,
    )
