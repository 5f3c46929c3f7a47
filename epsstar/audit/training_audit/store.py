"""The work folder of an audit of a training procedure: what lets an interrupted audit resume.

``--work DIR`` holds ``settings.json`` (everything that decides the runs: the procedure, the
data files' SHA-256, the canaries, the number of runs, the threat models, the seed) and one
``run-NNNNN.json`` per finished run (its canaries' scores, claim and model), each written
atomically once the run is done. Started again with the same settings, the audit reads the
finished runs and does only the others; with other settings, the folder is refused rather
than mixed. The canaries' tables a run's workers read are kept there too. Without ``--work``
the audit keeps its runs in memory and its tables in a temporary folder.

Everything resumed is checked before it is used: the settings, each run's record (a run of
this audit by its name, JSON through :func:`~epsstar.plumbing.files.json_parsing.parse_json`,
scores under the audit's threat models), and a file that cannot be read or written is one
line naming it.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from epsstar.audit.training_audit.procedure import RunScores
from epsstar.exceptions import InputFileError
from epsstar.plumbing.files.json_parsing import parse_json
from epsstar.plumbing.files.staging import atomic_write_json, check_output_folder
from epsstar.plumbing.records.json_types import JsonObject, JsonValue

__all__ = ["SETTINGS_FILE", "RunStore", "work_folder"]

SETTINGS_FILE: Final = "settings.json"


#: The name of a finished run's record: its index from 1, five digits.
_RUN_NAME: Final = re.compile(r"run-(\d{5})\.json")


def _run_file(index: int) -> str:
    return f"run-{index + 1:05d}.json"


def _first_difference(old: JsonObject, new: JsonObject) -> str:
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            return key
    return "?"


def _read(path: Path) -> JsonValue:
    """A JSON file of the work folder; what cannot be read or parsed is one line naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputFileError(
            f"--work: {path.name} must be UTF-8 JSON written by audit-training. Found other "
            f"bytes in {str(path)!r}."
        ) from None
    except OSError as error:
        raise InputFileError(
            f"--work: cannot read {path.name} ({error.strerror or error}). Found {str(path)!r}."
        ) from None
    return parse_json(text, str(path))


class RunStore:
    """Finished runs, kept in ``folder`` (``None``: in memory only), each scored under
    ``threat_models``."""

    def __init__(self, folder: Path | None, threat_models: frozenset[str] = frozenset()) -> None:
        self.folder = folder
        self.threat_models = threat_models
        self._memory: dict[int, RunScores] = {}

    @classmethod
    def open(cls, folder: Path | None, settings: JsonObject) -> RunStore:
        """The store of ``folder`` for an audit with ``settings`` (see the module)."""
        names = settings["threat_models"]
        assert isinstance(names, list)  # the audit's own settings
        threat_models = frozenset(str(name) for name in names)
        if folder is None:
            return cls(None, threat_models)
        check_output_folder("--work", folder)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise InputFileError(
                f"--work: cannot create the folder ({error.strerror or error}). "
                f"Found {str(folder)!r}."
            ) from None
        record = folder / SETTINGS_FILE
        if record.exists():
            kept = _read(record)
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
        return cls(folder, threat_models)

    @staticmethod
    def _index(path: Path, planned: int) -> int:
        """The run ``path`` records (from 0); a name of none of the ``planned`` runs is
        refused."""
        match = _RUN_NAME.fullmatch(path.name)
        index = -1 if match is None else int(match.group(1)) - 1
        if not 0 <= index < planned:
            raise InputFileError(
                f"--work: {path.name} is not the record of a run of this audit (its "
                f"{planned} runs are {_run_file(0)} to {_run_file(planned - 1)}); remove it "
                f"or use another folder. Found {str(path)!r}."
            )
        return index

    def finished(self, planned: int) -> dict[int, RunScores]:
        """The runs finished so far of the ``planned`` ones, by index, each record checked
        (see the module)."""
        if self.folder is None:
            return dict(self._memory)
        done: dict[int, RunScores] = {}
        try:
            paths = sorted(self.folder.glob("run-*"))
        except OSError as error:
            raise InputFileError(
                f"--work: cannot list the folder ({error.strerror or error}). "
                f"Found {str(self.folder)!r}."
            ) from None
        for path in paths:
            index = self._index(path, planned)
            value = _read(path)
            if not isinstance(value, dict):
                raise InputFileError(
                    f"--work: {path.name} must be a finished run's record. Found something else."
                )
            run = RunScores.from_dict(value, path)
            if set(run.scores) != self.threat_models or not all(
                len(scores) for scores in run.scores.values()
            ):
                raise InputFileError(
                    f"--work: {path.name} must hold scores under the threat models "
                    f"{sorted(self.threat_models)}. Found {sorted(run.scores)}."
                )
            done[index] = run
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
