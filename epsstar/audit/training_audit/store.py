"""The work folder of an audit of a training procedure: what lets an interrupted audit resume.

``--work DIR`` holds ``settings.json`` (everything that decides the runs: the procedure, the
data files' SHA-256, the canaries, the number of runs, the threat models, the seed) and one
``run-NNNNN.json`` per finished run (its canaries' scores, claim and model), each written
atomically once the run is done. Started again with the same settings, the audit reads the
finished runs and does only the others; with other settings, the folder is refused rather
than mixed. The canaries' tables a run's workers read are kept there too. Without ``--work``
the audit keeps its runs in memory and its tables in a temporary folder.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from epsstar.audit.data.files import atomic_write_json
from epsstar.audit.output.staging import check_output_folder
from epsstar.audit.training_audit.procedure import RunScores
from epsstar.exceptions import InputFileError
from epsstar.statistics.json_types import JsonObject

__all__ = ["SETTINGS_FILE", "RunStore", "work_folder"]

SETTINGS_FILE: Final = "settings.json"


def _run_file(index: int) -> str:
    return f"run-{index + 1:05d}.json"


def _first_difference(old: JsonObject, new: JsonObject) -> str:
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            return key
    return "?"


class RunStore:
    """Finished runs, kept in ``folder`` (``None``: in memory only)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._memory: dict[int, RunScores] = {}

    @classmethod
    def open(cls, folder: Path | None, settings: JsonObject) -> RunStore:
        """The store of ``folder`` for an audit with ``settings`` (see the module)."""
        if folder is None:
            return cls(None)
        check_output_folder("--work", folder)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise InputFileError(
                f"--work: cannot create the folder ({error.strerror or error}). "
                f"Found {str(folder)!r}."
            ) from None
        record = folder / SETTINGS_FILE
        if record.is_file():
            try:
                kept = json.loads(record.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                kept = None
            if kept != settings:
                key = _first_difference(kept, settings) if isinstance(kept, dict) else "all"
                raise InputFileError(
                    f"--work holds the runs of another audit (its settings differ in {key!r}); "
                    f"use another folder or empty it. Found {str(folder)!r}."
                )
        elif any(folder.iterdir()):
            raise InputFileError(
                f"--work must be empty or hold an earlier run of this audit. Found files in "
                f"{str(folder)!r}."
            )
        else:
            atomic_write_json(record, settings)
        return cls(folder)

    def finished(self) -> dict[int, RunScores]:
        """The runs finished so far, by index."""
        if self.folder is None:
            return dict(self._memory)
        done: dict[int, RunScores] = {}
        for path in sorted(self.folder.glob("run-*.json")):
            try:
                index = int(path.stem.removeprefix("run-")) - 1
                value = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                raise InputFileError(
                    f"--work: {path.name} must be a finished run's record. Found something else."
                ) from None
            if not isinstance(value, dict):
                raise InputFileError(
                    f"--work: {path.name} must be a finished run's record. Found something else."
                )
            done[index] = RunScores.from_dict(value, path)
        return done

    def save(self, index: int, scores: RunScores) -> None:
        """Keep a finished run (atomically on disk)."""
        if self.folder is None:
            self._memory[index] = scores
        else:
            atomic_write_json(self.folder / _run_file(index), scores.to_dict())


@contextmanager
def work_folder(folder: Path | None) -> Iterator[Path]:
    """``folder`` for the runs' shared files, or a temporary folder removed afterwards."""
    if folder is not None:
        yield folder
        return
    scratch = Path(tempfile.mkdtemp(prefix="epsstar-training-audit-"))
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
