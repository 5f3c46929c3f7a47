"""The procedure under audit as a command: a template run without a shell, with a timeout.

``--command "python fit.py {train} {out}"`` is split like a POSIX shell would split it
(:func:`shlex.split`, so quotes group words) and run directly, never through a shell: no
pipes, redirections or variables are interpreted, and nothing in a path can run as code.
``{train}`` becomes the path of the run's training table and ``{out}`` that of an empty
folder into which the command saves one model; ``{seed}`` (optional) becomes the run's seed.
The command runs in its own process group, so that on a timeout it is stopped with every
process it started; a command that cannot start, fails or runs out of time is reported in
one line with the last line it wrote to standard error.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import check_in_range

__all__ = ["CommandTemplate", "run_command"]

PLACEHOLDERS: Final = ("{train}", "{out}")
#: Characters of standard error kept for the one-line message.
_STDERR_SHOWN = 300


@dataclass(frozen=True, slots=True)
class CommandTemplate:
    """A command with ``{train}`` and ``{out}`` (and optionally ``{seed}``) in its words."""

    text: str
    words: tuple[str, ...]
    timeout: float

    @classmethod
    def parse(cls, text: str, timeout: float) -> CommandTemplate:
        """The template ``text``, checked: it splits into words and names both placeholders."""
        limit = check_in_range("--timeout", timeout, 0.0, float("inf"))
        try:
            words = tuple(shlex.split(text))
        except ValueError as error:
            raise InvalidInputError(
                f"--command: cannot split it into words ({error}). Found {text!r}."
            ) from None
        if not words:
            raise InvalidInputError(f"--command must name a program. Found {text!r}.")
        for placeholder in PLACEHOLDERS:
            if not any(placeholder in word for word in words):
                raise InvalidInputError(
                    f"--command must contain {placeholder} (the training table is "
                    f"{{train}}, the folder to save the model in is {{out}}). Found {text!r}."
                )
        return cls(text, words, limit)

    def arguments(self, train: Path, out: Path, seed: int) -> list[str]:
        """The words with the placeholders filled in."""
        values = {"{train}": str(train), "{out}": str(out), "{seed}": str(seed)}
        filled = []
        for word in self.words:
            for placeholder, value in values.items():
                word = word.replace(placeholder, value)
            filled.append(word)
        return filled


def _last_line(stderr: bytes) -> str:
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines()]
    shown = next((line for line in reversed(lines) if line), "")
    return shown if len(shown) <= _STDERR_SHOWN else shown[: _STDERR_SHOWN - 3] + "..."


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the command's process group (it was started as its leader)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    process.communicate()


def run_command(
    template: CommandTemplate, train: Path, out: Path, seed: int, *, run: int = 0
) -> float:
    """Run the template for one training run; the seconds it took.

    ``run`` (0-based) names the run in the errors. Standard output is discarded; standard
    error is kept for the message of a failure.
    """
    arguments = template.arguments(train, out, seed)
    where = f"--command (run {run + 1})"
    start = time.perf_counter()
    try:
        process = subprocess.Popen(
            arguments,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as error:
        raise InvalidInputError(
            f"{where}: cannot start {arguments[0]!r} ({error.strerror or error}). "
            f"Found {template.text!r}."
        ) from None
    try:
        _, stderr = process.communicate(timeout=template.timeout)
    except subprocess.TimeoutExpired:
        _stop(process)
        raise InvalidInputError(
            f"{where} did not finish within {template.timeout:g} s (--timeout) and was "
            f"stopped. Found {template.text!r}."
        ) from None
    except BaseException:
        _stop(process)
        raise
    if process.returncode != 0:
        said = _last_line(stderr)
        tail = f": {said}" if said else " and wrote nothing to standard error"
        raise InvalidInputError(
            f"{where} failed with exit code {process.returncode}{tail}. Found {template.text!r}."
        )
    return time.perf_counter() - start
