"""Reading loss files, and the digests of the files an audit read.

Loss files hold one number per record, in a one-column table read by
:mod:`epsstar.audit.data.tables` like every other table (the same formats and the same
messages): ``.npy`` (a 1-D array, or one column), ``.csv`` (one column, with or without
a header line), ``.parquet`` or ``.npz`` (one column). Each file an audit read is recorded
with the SHA-256 of its bytes (:func:`epsstar.plumbing.files.digests.sha256_of`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from epsstar.audit.data.tables.columns import read_column
from epsstar.audit.data.tables.formats import DATA_FILE_SUFFIXES
from epsstar.plumbing.files.digests import sha256_of
from epsstar.plumbing.records.json_records import JsonRecord
from epsstar.statistics._validation import FloatArray

__all__ = [
    "LOSS_FILE_SUFFIXES",
    "FileDigest",
    "digests_of",
    "read_loss_file",
]

LOSS_FILE_SUFFIXES = tuple(DATA_FILE_SUFFIXES)


def read_loss_file(path: str | os.PathLike[str], *, name: str = "losses") -> FloatArray:
    """Per-record losses from a one-column table (:func:`epsstar.audit.data.tables.read_column`).

    ``.npy`` (a 1-D array, or one column), ``.csv`` (one column, header line optional),
    ``.parquet``/``.pq`` or ``.npz`` (one column); every value a finite number. ``name``
    (the command-line option, say) names the file in the messages about its path.
    """
    return read_column(path, name=name)


@dataclass(frozen=True, slots=True)
class FileDigest(JsonRecord):
    """A file an audit read, and the SHA-256 of its bytes."""

    path: str
    sha256: str

    @classmethod
    def of(cls, path: str | os.PathLike[str]) -> FileDigest:
        """The digest of the file at ``path``, read now."""
        return cls(os.fspath(path), sha256_of(Path(path)))


def digests_of(files: Iterable[str | os.PathLike[str]]) -> tuple[FileDigest, ...]:
    """The digests of ``files``, in order."""
    return tuple(FileDigest.of(path) for path in files)
