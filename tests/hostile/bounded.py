"""A CLI run in a child process with a deadline: a regression that hangs fails the test
(``subprocess.TimeoutExpired``) instead of holding the test run."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Finished:
    """How a bounded run ended."""

    code: int
    stdout: str
    stderr: str
    seconds: float

    def one_line(self) -> str:
        """The one line of standard error (no traceback, nothing else)."""
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        assert "Traceback" not in self.stderr, self.stderr
        assert len(lines) == 1, self.stderr
        return lines[0]


def run_cli(args: list[str], *, seconds: float, cwd: Path | None = None) -> Finished:
    """``python -m epsstar args`` with the checkout importable, killed after ``seconds``."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "epsstar", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=cwd,
        timeout=seconds,
        check=False,
    )
    return Finished(done.returncode, done.stdout, done.stderr, time.monotonic() - started)
