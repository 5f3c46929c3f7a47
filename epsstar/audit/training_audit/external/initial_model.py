"""``--init PATH``: the model every run of a procedure from outside epsstar starts from.

A worst-case initial model (Annamalai & De Cristofaro 2024, "Nearly Tight Black-Box Auditing of
Differentially Private Machine Learning") lets a black-box audit see more of each update: a run
that starts from weights fitted to the data without the canaries spends its steps on little but
them. epsstar does not read the file: it is in whatever format the trainer reads, is copied
unchanged into each run's own folder (so no run can change another's start), and its path is
``{init}`` of a command or the ``init`` argument of a function. Its SHA-256 is part of what the
procedure is, so an audit resumed with another file is refused.

A folder (a Hugging Face model, the base of a language model's fine-tuning) is not copied: a
language model's weights can take gigabytes, and a copy per run would cost more than many
runs' training. Each run is handed the folder itself; its digest (the SHA-256 of each file's
relative path and contents, in name order) is taken when the audit starts and again after
every run, and a run that changed the folder is refused in one line, so that no run starts
from another's leftovers.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from epsstar.exceptions import InputFileError
from epsstar.plumbing.files.digests import sha256_of, sha256_of_bytes
from epsstar.plumbing.records.json_types import JsonObject

__all__ = ["INIT_PLACEHOLDER", "InitialModel"]

#: The word of a command template that becomes the path of the run's copy of the model.
INIT_PLACEHOLDER: Final = "{init}"


@dataclass(frozen=True, slots=True)
class InitialModel:
    """The file or folder ``path`` (its SHA-256 ``sha256``) that every run starts from."""

    path: Path
    sha256: str

    @classmethod
    def of(cls, path: str | Path) -> InitialModel:
        """The file or folder at ``path``, checked: it can be read (one line otherwise)."""
        given = Path(path)
        if not (given.is_file() or given.is_dir()):
            raise InputFileError(
                f"--init must name a model file or a model folder. Found {str(given)!r}."
            )
        try:
            digest = _folder_digest(given) if given.is_dir() else sha256_of(given)
        except OSError as error:
            raise InputFileError(
                f"--init: cannot read it ({error.strerror or error}). Found {str(given)!r}."
            ) from None
        return cls(given, digest)

    @property
    def folder(self) -> bool:
        """Whether the model is a folder (handed to runs as it is, not copied)."""
        return self.path.is_dir()

    def describe(self) -> JsonObject:
        return {"folder" if self.folder else "file": self.path.name, "sha256": self.sha256}

    def for_run(self, folder: Path) -> Path:
        """What a run is handed: a copy of a file (:meth:`copy_into`), or the folder itself."""
        return self.path.resolve() if self.folder else self.copy_into(folder)

    def check_unchanged(self, run: int) -> None:
        """Refuse a run that changed the folder every run starts from."""
        if not self.folder:
            return  # each run had its own copy
        try:
            same = _folder_digest(self.path) == self.sha256
        except OSError:
            same = False
        if not same:
            raise InputFileError(
                f"--init: run {run + 1} changed the model folder every run starts from; a run "
                f"must read it only (write into {{out}}). Found {str(self.path)!r} changed."
            )

    def copy_into(self, folder: Path) -> Path:
        """A copy of the file, byte for byte, in a new folder ``init`` of ``folder``."""
        target = folder / "init"
        target.mkdir()
        try:
            return Path(shutil.copyfile(self.path, target / self.path.name))
        except OSError as error:
            raise InputFileError(
                f"--init: cannot copy the file for a run ({error.strerror or error}). "
                f"Found {str(self.path)!r}."
            ) from None


def _folder_digest(folder: Path) -> str:
    """The SHA-256 of every file under ``folder``: relative path and contents, in name order."""
    lines = [
        f"{path.relative_to(folder).as_posix()}\t{sha256_of(path)}"
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    ]
    return sha256_of_bytes("\n".join(lines).encode("utf-8"))
