"""The SHA-256 digests epsstar records: of a file's bytes, and of bytes held in memory.

Every digest an output shows (a model file, a data set, its partitions, a folder of
files, a training run's fingerprint) is the hex SHA-256 of one of these two.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["sha256_of", "sha256_of_bytes"]


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in chunks."""
    with path.open("rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def sha256_of_bytes(*chunks: bytes) -> str:
    """Hex SHA-256 of ``chunks`` one after the other (the same as of their concatenation)."""
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    return digest.hexdigest()
