"""Data sets in partitions: a data file, a directory of Parquet files, or a glob, local or at
any fsspec URL (``s3://bucket/train/``, ``gs://…/*.parquet``), with storage options.

:func:`find_partitions` lists the partitions in their natural order (``part.2`` before
``part.10``), which is the order of the data set's rows. :func:`local_partition` gives a
local file to read a partition from: the file itself, or a temporary copy of a remote one.
The digest of a data set is that of its only file, or else the SHA-256 of its partitions'
names and digests, one ``name sha256`` line each.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

from epsstar.exceptions import InputFileError
from epsstar.plumbing.files.digests import sha256_of_bytes
from epsstar.plumbing.records.json_types import JsonValue

__all__ = [
    "DataSet",
    "StorageOptions",
    "dataset_digest",
    "find_partitions",
    "local_partition",
    "partition_rows",
]

#: fsspec's options for the storage of a data set (credentials, an endpoint, ...): a JSON
#: object, as ``--storage-options`` gives it.
StorageOptions: TypeAlias = Mapping[str, JsonValue]

_LOCAL = ("file", "local")


@dataclass(frozen=True, slots=True)
class DataSet:
    """A data set's source as given, and its partitions (local paths or fsspec URLs)."""

    source: str
    partitions: tuple[str, ...]
    storage_options: StorageOptions = field(default_factory=dict)

    @property
    def local(self) -> bool:
        return "://" not in self.partitions[0]


def _natural(name: str) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def _filesystem(source: str, options: StorageOptions) -> tuple[Any, list[str]]:
    import fsspec
    from fsspec.core import split_protocol

    # The source's URL chooses the file system; storage options only configure it. fsspec
    # also reads a "protocol" option, which would send a local folder to S3 (and a missing
    # s3fs would then be the message).
    wanted = split_protocol(source)[0] or "file"
    chosen = options.get("protocol", wanted)
    if chosen != wanted and not (wanted in _LOCAL and chosen in _LOCAL):
        raise InputFileError(
            f"--storage-options must not choose another file system than the data set's own "
            f"({wanted}): its 'protocol' is {chosen!r}; write the URL instead (s3://...). "
            f"Found {source!r}."
        )
    try:
        fs, _, paths = fsspec.get_fs_token_paths(source, storage_options=dict(options))
    except (ImportError, ValueError, OSError) as error:
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise InputFileError(f"cannot open the data set ({message}). Found {source!r}.") from None
    return fs, list(paths)


def find_partitions(
    source: str | os.PathLike[str], storage_options: StorageOptions | None = None
) -> DataSet:
    """The partitions of ``source``: a file, a directory (its ``*.parquet`` files, at any
    depth, leaving out hidden ones) or a glob."""
    text = os.fspath(source)
    options = dict(storage_options or {})
    fs, paths = _filesystem(text, options)
    files: list[str] = []
    try:
        for path in paths:
            if fs.isdir(path):
                files += [
                    found
                    for found in fs.find(path)
                    if found.endswith(".parquet")
                    and not any(
                        part.startswith((".", "_"))
                        for part in found[len(path.rstrip("/")) :].split("/")
                    )
                ]
            elif fs.isfile(path):
                files.append(path)
    except Exception as error:  # a remote store's own errors (botocore's) are not OSError
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise InputFileError(f"cannot list the data set ({reason}). Found {text!r}.") from None
    if not files:
        raise InputFileError(
            f"a data set must be a data file, a directory of .parquet files or a glob that "
            f"matches files. Found nothing at {text!r}."
        )
    files = sorted(set(files), key=_natural)
    protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
    if protocol not in _LOCAL:
        files = [fs.unstrip_protocol(path) for path in files]
    return DataSet(text, tuple(files), options)


@contextmanager
def local_partition(partition: str, storage_options: StorageOptions) -> Iterator[Path]:
    """A local file holding ``partition``: itself, or a temporary copy while the block runs."""
    if "://" not in partition:
        yield Path(partition)
        return
    import fsspec

    suffix = Path(partition.rsplit("/", 1)[-1]).suffix
    with tempfile.TemporaryDirectory(prefix="epsstar-") as scratch:
        copy = Path(scratch) / f"partition{suffix}"
        try:
            with fsspec.open(partition, "rb", **storage_options) as remote, copy.open("wb") as out:
                shutil.copyfileobj(remote, out, 1 << 20)
        except OSError as error:
            raise InputFileError(
                f"cannot read the partition ({error}). Found {partition!r}."
            ) from None
        yield copy


def dataset_digest(digests: Sequence[tuple[str, str]]) -> str:
    """The digest of a data set from its partitions' ``(name, sha256)``, in order."""
    if len(digests) == 1:
        return digests[0][1]
    lines = "".join(f"{name} {digest}\n" for name, digest in digests)
    return sha256_of_bytes(lines.encode("utf-8"))


def partition_rows(data: DataSet) -> tuple[int, ...] | None:
    """The rows of each partition from the Parquet footers (one small read each, local or
    remote), or ``None`` when a partition is not a Parquet file or its footer cannot be
    read (its rows are then known only once it is streamed)."""
    if not all(part.endswith(".parquet") for part in data.partitions):
        return None
    import fsspec
    import pyarrow
    import pyarrow.parquet as pq

    rows = []
    for part in data.partitions:
        try:
            with fsspec.open(part, "rb", **data.storage_options) as stream:
                rows.append(int(pq.ParquetFile(stream).metadata.num_rows))
        except (OSError, pyarrow.ArrowException):
            return None
    return tuple(rows)
