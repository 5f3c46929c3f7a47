"""``--init PATH``: the model file every run of a procedure from outside epsstar starts from.

A worst-case initial model (Annamalai & De Cristofaro 2024, "Nearly Tight Black-Box Auditing of
Differentially Private Machine Learning") lets a black-box audit see more of each update: a run
that starts from weights fitted to the data without the canaries spends its steps on little but
them. epsstar does not read the file: it is in whatever format the trainer reads, is copied
unchanged into each run's own folder (so no run can change another's start), and its path is
``{init}`` of a command or the ``init`` argument of a function. Its SHA-256 is part of what the
procedure is, so an audit resumed with another file is refused.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from epsstar.exceptions import InputFileError
from epsstar.plumbing.files.digests import sha256_of
from epsstar.plumbing.records.json_types import JsonObject

__all__ = ["INIT_PLACEHOLDER", "InitialModel"]

#: The word of a command template that becomes the path of the run's copy of the model.
INIT_PLACEHOLDER: Final = "{init}"


@dataclass(frozen=True, slots=True)
class InitialModel:
    """The file ``path`` (its SHA-256 ``sha256``) that every run starts from."""

    path: Path
    sha256: str

    @classmethod
    def of(cls, path: str | Path) -> InitialModel:
        """The file at ``path``, checked: a file that can be read (one line otherwise)."""
        file = Path(path)
        if not file.is_file():
            raise InputFileError(f"--init must name a model file. Found {str(file)!r}.")
        try:
            digest = sha256_of(file)
        except OSError as error:
            raise InputFileError(
                f"--init: cannot read the file ({error.strerror or error}). Found {str(file)!r}."
            ) from None
        return cls(file, digest)

    def describe(self) -> JsonObject:
        return {"file": self.path.name, "sha256": self.sha256}

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
