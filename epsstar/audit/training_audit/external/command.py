"""The procedure under audit as a command: a template run without a shell, with a timeout.

``--command "python fit.py {train} {out}"`` is split like a POSIX shell would split it
(:func:`shlex.split`, so quotes group words) and run directly, never through a shell: no
pipes, redirections or variables are interpreted, and nothing in a path can run as code.
``{train}`` becomes the path of the run's training table and ``{out}`` that of an empty
folder into which the command saves one model; ``{seed}`` (optional) becomes the run's seed,
and ``{init}`` (optional, with ``--init``) the run's copy of the model to start from
(:mod:`.initial_model`).
What is guaranteed, however a run ends (the command finished, failed, ran out of
``--timeout`` or the audit was interrupted): the run returns within its timeout plus
:data:`_STOP_SECONDS`, and no process it started outlives it. The command runs in its own
session and process group, with a random token in its environment
(:data:`RUN_VARIABLE`); when it ends, the group is killed, then every process whose
environment still holds the token (read from ``/proc``: children that called ``setsid`` or
were left in the background, at any depth) until none is left. A process that replaced its
whole environment (``exec`` with a new one) escapes the second step; where there is no
``/proc`` (macOS) only the group is killed. Standard error goes to an unnamed temporary
file, not a pipe, so a process that keeps it open cannot hold the run; a command that
cannot start, fails or runs out of time is reported in one line with the last line it wrote
there.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final

from epsstar.audit.training_audit.external.initial_model import INIT_PLACEHOLDER
from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import check_in_range

__all__ = ["RUN_VARIABLE", "CommandTemplate", "run_command"]

PLACEHOLDERS: Final = ("{train}", "{out}")
#: The environment variable that carries a run's token to every process it starts.
RUN_VARIABLE: Final = "EPSSTAR_COMMAND_RUN"
#: Characters of standard error kept for the one-line message.
_STDERR_SHOWN = 300
#: Bytes read from the end of standard error for it.
_STDERR_KEPT = 64 * 1024
#: Longest time spent stopping what a run left behind, in seconds.
_STOP_SECONDS: Final = 5.0


@dataclass(frozen=True, slots=True)
class CommandTemplate:
    """A command with ``{train}`` and ``{out}`` (and optionally ``{seed}`` and ``{init}``) in its
    words."""

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

    @property
    def uses_init(self) -> bool:
        """Whether a word holds ``{init}``, the path of the model a run starts from."""
        return any(INIT_PLACEHOLDER in word for word in self.words)

    def arguments(self, train: Path, out: Path, seed: int, init: Path | None = None) -> list[str]:
        """The words with the placeholders filled in."""
        values = {"{train}": str(train), "{out}": str(out), "{seed}": str(seed)}
        if init is not None:
            values[INIT_PLACEHOLDER] = str(init)
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


def _tail(file: BinaryIO) -> bytes:
    """The last :data:`_STDERR_KEPT` bytes the command wrote to standard error."""
    size = os.fstat(file.fileno()).st_size
    file.seek(max(0, size - _STDERR_KEPT))
    return file.read(_STDERR_KEPT)


def _carrying(token: str) -> list[int]:
    """The processes whose environment holds the run's token (read from ``/proc``; none
    where there is no ``/proc``). A zombie's environment reads empty: it is not listed."""
    wanted = f"{RUN_VARIABLE}={token}".encode()
    found = []
    try:
        entries = [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return []
    for entry in entries:
        try:
            with open(f"/proc/{entry}/environ", "rb") as file:
                environment = file.read()
        except OSError:
            continue  # gone, or another user's
        if wanted in environment.split(b"\0") and int(entry) != os.getpid():
            found.append(int(entry))
    return found


def _stop_all(process: subprocess.Popen[bytes], token: str) -> None:
    """Kill the command's process group, then every process still carrying the run's token
    (those that left the group with ``setsid``, or were left in the background), until none
    is left or :data:`_STOP_SECONDS` have passed; and reap the command."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    deadline = time.monotonic() + _STOP_SECONDS
    while time.monotonic() < deadline:
        left = _carrying(token)
        if not left:
            break
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
    with contextlib.suppress(ProcessLookupError):
        process.kill()
    process.wait()


def run_command(
    template: CommandTemplate,
    train: Path,
    out: Path,
    seed: int,
    *,
    run: int = 0,
    init: Path | None = None,
) -> float:
    """Run the template for one training run; the seconds it took.

    ``run`` (0-based) names the run in the errors. Standard output is discarded; standard
    error goes to an unnamed temporary file (no pipe that a process left behind could hold
    open), whose last line makes the message of a failure. However the run ends, every
    process it started is stopped (the module docstring).
    """
    arguments = template.arguments(train, out, seed, init)
    where = f"--command (run {run + 1})"
    token = secrets.token_hex(16)
    environment = {**os.environ, RUN_VARIABLE: token}
    start = time.perf_counter()
    with tempfile.TemporaryFile() as stderr:
        try:
            process = subprocess.Popen(
                arguments,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
                env=environment,
            )
        except OSError as error:
            raise InvalidInputError(
                f"{where}: cannot start {arguments[0]!r} ({error.strerror or error}). "
                f"Found {template.text!r}."
            ) from None
        try:
            process.wait(timeout=template.timeout)
        except subprocess.TimeoutExpired:
            raise InvalidInputError(
                f"{where} did not finish within {template.timeout:g} s (--timeout) and was "
                f"stopped with every process it started. Found {template.text!r}."
            ) from None
        finally:
            _stop_all(process, token)  # what it left behind, or on Ctrl-C
        said = _last_line(_tail(stderr))
    if process.returncode != 0:
        tail = f": {said}" if said else " and wrote nothing to standard error"
        raise InvalidInputError(
            f"{where} failed with exit code {process.returncode}{tail}. Found {template.text!r}."
        )
    return time.perf_counter() - start
