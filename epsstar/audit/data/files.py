"""Reading loss files and writing outputs atomically.

Loss files hold one number per record, in a one-column table read by
:mod:`epsstar.audit.data.tables` like every other table (the same formats and the same
messages): ``.npy`` (a 1-D array, or one column), ``.csv`` (one column, with or without
a header line), ``.parquet`` or ``.npz`` (one column). Outputs are written to a
temporary file in the target directory and moved into place with :func:`os.replace`,
so a reader never sees half a file and a failed run leaves no file behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from epsstar.audit.data.tables import DATA_FILE_SUFFIXES, read_column
from epsstar.exceptions import InputFileError
from epsstar.plumbing.json_records import JsonRecord
from epsstar.statistics._validation import FloatArray

__all__ = [
    "LOSS_FILE_SUFFIXES",
    "FileDigest",
    "atomic_write_bytes",
    "atomic_write_json",
    "digests_of",
    "json_text",
    "read_loss_file",
    "sha256_of",
]

LOSS_FILE_SUFFIXES = tuple(DATA_FILE_SUFFIXES)


def read_loss_file(path: str | os.PathLike[str], *, name: str = "losses") -> FloatArray:
    """Per-record losses from a one-column table (:func:`epsstar.audit.data.tables.read_column`).

    ``.npy`` (a 1-D array, or one column), ``.csv`` (one column, header line optional),
    ``.parquet``/``.pq`` or ``.npz`` (one column); every value a finite number. ``name``
    (the command-line option, say) names the file in the messages about its path.
    """
    return read_column(path, name=name)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` all at once: a temporary file, then :func:`os.replace`."""
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    try:
        handle, temporary = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".tmp", dir=directory
        )
    except OSError as error:
        raise InputFileError(f"cannot write {str(target)!r}: {error.strerror or error}.") from None
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException as error:
        # Whatever stopped the write (a full disk, Ctrl-C), leave no temporary behind.
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            message = error.strerror or str(error)
            raise InputFileError(f"cannot write {str(target)!r}: {message}.") from None
        raise


def json_text(payload: Any) -> str:
    """``payload`` as the commands write JSON: indented, strict (no NaN), a final newline."""
    return json.dumps(payload, indent=2, allow_nan=False) + "\n"


def atomic_write_json(path: str | os.PathLike[str], payload: Any) -> None:
    """Write ``payload`` as :func:`json_text` atomically."""
    atomic_write_bytes(path, json_text(payload).encode("utf-8"))


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    with path.open("rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


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
