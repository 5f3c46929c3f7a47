"""The SHA-256 digests: a file's equals that of its bytes, and chunks hash as one text."""

from __future__ import annotations

import hashlib
from pathlib import Path

from epsstar.plumbing.files.digests import sha256_of, sha256_of_bytes


def test_a_file_digest_is_the_digest_of_its_bytes(tmp_path: Path) -> None:
    data = bytes(range(256)) * 5_000  # over a megabyte: read in chunks
    path = tmp_path / "data.bin"
    path.write_bytes(data)
    assert sha256_of(path) == sha256_of_bytes(data) == hashlib.sha256(data).hexdigest()


def test_chunks_hash_as_their_concatenation() -> None:
    chunks = (b"name a\n", b"", b"name b\n")
    assert sha256_of_bytes(*chunks) == sha256_of_bytes(b"".join(chunks))
    assert sha256_of_bytes(b"a", b"b") != sha256_of_bytes(b"b", b"a")
    assert sha256_of_bytes() == hashlib.sha256(b"").hexdigest()
