"""NPY and NPZ files, read by offset or decompressed as they are read, never loaded whole
(the layouts are described in :mod:`epsstar.audit.data.tables`)."""

from __future__ import annotations

import math
import os
import struct
import zipfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.data.tables.shared import MAX_COLUMNS, _check_unique, _first_line, _unreadable
from epsstar.exceptions import InputFileError, InsufficientDataError


@dataclass(frozen=True, slots=True)
class _ArrayInfo:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    fortran: bool


def _read_header(stream: IO[bytes], path: Path, name: str) -> _ArrayInfo:
    where = f"{path}" if not name else f"{path}: array {name!r}"
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
        else:
            raise ValueError(f"unsupported .npy format version {version}")
    except (zlib.error, zipfile.BadZipFile) as error:
        raise _damaged(path, error) from None
    except Exception as error:  # a damaged header fails in many ways
        raise InputFileError(
            f"{where}: must be a readable .npy array. Found: {_first_line(error)}."
        ) from None
    if any(int(size) < 0 for size in shape):
        raise InputFileError(f"{where}: must have a shape of sizes ≥ 0. Found {shape}.")
    if dtype.hasobject:
        raise InputFileError(
            f"{where}: must not hold Python objects (they are not read, for safety). "
            f"Found dtype {dtype}."
        )
    if dtype.names is not None:
        raise InputFileError(
            f"{where}: must be a plain array, not a structured one. Found {dtype}."
        )
    return _ArrayInfo(name, tuple(int(s) for s in shape), dtype, bool(fortran and len(shape) > 1))


def _check_size(info: _ArrayInfo, available: int, path: Path) -> None:
    """Refuse an array whose header announces more bytes than the file holds."""
    where = f"{path}" if not info.name else f"{path}: array {info.name!r}"
    needed = math.prod(info.shape) * info.dtype.itemsize
    if needed > available:
        raise InputFileError(
            f"{where}: must hold the {needed} bytes its header announces (shape {info.shape}, "
            f"{info.dtype}). Found {max(available, 0)}."
        )


def _damaged(path: Path, error: BaseException) -> InputFileError:
    return InputFileError(
        f"{path}: must be a readable .npz file. Found a damaged archive: {_first_line(error)}."
    )


# What reading a damaged compressed archive raises.
_ARCHIVE_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError)


def _readinto(stream: IO[bytes], view: memoryview) -> int | None:
    """``stream.readinto(view)``: binary streams have it, though ``IO[bytes]`` does not say so."""
    readinto: Callable[[memoryview], int | None] = getattr(stream, "readinto")  # noqa: B009
    return readinto(view)


def _fill(stream: IO[bytes], out: NDArray[Any], path: Path) -> None:
    """Read exactly ``out.nbytes`` bytes from ``stream`` into the contiguous array ``out``."""
    view = out.view(np.uint8).data.cast("B")  # raises rather than copies if not contiguous
    done = 0
    while done < len(view):
        count = _readinto(stream, view[done:])
        if not count:
            raise InputFileError(
                f"{path}: must hold all the data its header announces. Found the file truncated."
            )
        done += count


class _Source(Protocol):
    info: _ArrayInfo

    def read(self, start: int, stop: int) -> NDArray[Any]: ...


class _RegionSource:
    """An array stored uncompressed at a fixed offset of an open file (random access)."""

    def __init__(self, handle: IO[bytes], offset: int, info: _ArrayInfo, path: Path) -> None:
        self.info, self._handle, self._offset, self._path = info, handle, offset, path

    def read(self, start: int, stop: int) -> NDArray[Any]:
        info, size = self.info, self.info.dtype.itemsize
        rows = stop - start
        if info.fortran:
            n, d = info.shape
            out = np.empty((rows, d), dtype=info.dtype, order="F")
            for j in range(d):
                self._handle.seek(self._offset + (j * n + start) * size)
                _fill(self._handle, out[:, j], self._path)
            return out
        width = math.prod(info.shape[1:])
        out = np.empty((rows, *info.shape[1:]), dtype=info.dtype)
        self._handle.seek(self._offset + start * width * size)
        _fill(self._handle, out, self._path)
        return out


class _StreamSource:
    """A compressed NPZ member, decompressed front to back (reads must be consecutive)."""

    def __init__(self, archive: zipfile.ZipFile, member: str, info: _ArrayInfo, path: Path):
        self.info, self._archive, self._member, self._path = info, archive, member, path
        self._streams: list[IO[bytes]] = []

    def _open(self, skip: int) -> IO[bytes]:
        stream = self._archive.open(self._member)
        _read_header(stream, self._path, self.info.name)
        if skip:
            stream.seek(stream.tell() + skip)
        return stream

    def read(self, start: int, stop: int) -> NDArray[Any]:
        try:
            return self._read(start, stop)
        except _ARCHIVE_ERRORS as error:
            raise _damaged(self._path, error) from None

    def _read(self, start: int, stop: int) -> NDArray[Any]:
        info = self.info
        if info.fortran:
            n, d = info.shape
            if not self._streams:
                self._streams = [self._open(j * n * info.dtype.itemsize) for j in range(d)]
            out = np.empty((stop - start, d), dtype=info.dtype, order="F")
            for j, stream in enumerate(self._streams):
                _fill(stream, out[:, j], self._path)
            return out
        if not self._streams:
            self._streams = [self._open(0)]
        out = np.empty((stop - start, *info.shape[1:]), dtype=info.dtype)
        _fill(self._streams[0], out, self._path)
        return out

    def close(self) -> None:
        for stream in self._streams:
            stream.close()


def _member_data_start(handle: IO[bytes], info: zipfile.ZipInfo, path: Path) -> int:
    """Offset in the archive of an uncompressed member's bytes (after its local header)."""
    handle.seek(info.header_offset)
    local = handle.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise InputFileError(
            f"{path}: must be a readable .npz file. Found a damaged entry {info.filename!r}."
        )
    name_length, extra_length = struct.unpack("<HH", local[26:30])
    return int(info.header_offset) + 30 + int(name_length) + int(extra_length)


class _ArrayFile:
    """The arrays of one .npy or .npz file, opened for reading in row ranges."""

    def __init__(self, path: Path, kind: str) -> None:
        self.path = path
        self._handle: IO[bytes] = open(path, "rb")  # noqa: SIM115 - closed in close()
        self._archive: zipfile.ZipFile | None = None
        self.sources: dict[str, _Source] = {}
        try:
            if kind == "npy":
                info = _read_header(self._handle, path, "")
                size = os.fstat(self._handle.fileno()).st_size
                _check_size(info, size - self._handle.tell(), path)
                self.sources[""] = _RegionSource(self._handle, self._handle.tell(), info, path)
            else:
                self._open_archive()
        except BaseException:
            self.close()
            raise

    def _open_archive(self) -> None:
        path = self.path
        try:
            self._archive = zipfile.ZipFile(self._handle)
        except (zipfile.BadZipFile, OSError, ValueError) as error:
            raise _unreadable(path, "npz", error) from None
        members = [member for member in self._archive.infolist() if not member.is_dir()]
        _check_unique(path, [member.filename for member in members])
        for member in members:
            if not member.filename.endswith(".npy"):
                raise InputFileError(
                    f"{path}: every entry of an .npz file must be a .npy array. "
                    f"Found {member.filename!r}."
                )
            name = member.filename[: -len(".npy")]
            if member.flag_bits & 0x1:
                raise InputFileError(f"{path}: array {name!r} must not be encrypted.")
            if member.compress_type == zipfile.ZIP_STORED:
                start = _member_data_start(self._handle, member, path)
                self._handle.seek(start)
                info = _read_header(self._handle, path, name)
                offset = self._handle.tell()
                _check_size(info, start + member.file_size - offset, path)
                self.sources[name] = _RegionSource(self._handle, offset, info, path)
            else:
                try:
                    with self._archive.open(member) as stream:
                        info = _read_header(stream, path, name)
                        _check_size(info, member.file_size - stream.tell(), path)
                except _ARCHIVE_ERRORS as error:
                    raise _damaged(path, error) from None
                self.sources[name] = _StreamSource(self._archive, member.filename, info, path)
        if not self.sources:
            raise InsufficientDataError(f"{path}: must hold at least one array. Found none.")

    def close(self) -> None:
        for source in self.sources.values():
            if isinstance(source, _StreamSource):
                source.close()
        if self._archive is not None:
            self._archive.close()
        self._handle.close()

    def __enter__(self) -> _ArrayFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class _Column:
    """Where a named column lives: a 1-D array, or column ``index`` of a 2-D one."""

    array: str
    index: int | None


@dataclass(frozen=True, slots=True)
class _ArrayLayout:
    columns: dict[str, _Column]
    n_rows: int
    #: The columns the file gives no name (those of a 2-D array without ``columns``).
    unnamed: tuple[str, ...] = ()


def _check_width(path: Path, shape: tuple[int, ...]) -> None:
    """Refuse a 2-D array with no rows or more than :data:`MAX_COLUMNS` columns."""
    if len(shape) == 2 and shape[1] > MAX_COLUMNS:
        raise InputFileError(
            f"{path}: must have at most {MAX_COLUMNS} columns. Found shape {shape}."
        )
    if len(shape) == 2 and shape[0] == 0:
        raise InsufficientDataError(f"{path}: must hold at least one row. Found none.")


def _array_layout(arrays: _ArrayFile) -> _ArrayLayout:
    path, sources = arrays.path, arrays.sources
    for source in sources.values():
        _check_width(path, source.info.shape)
    if "" in sources:  # .npy
        info = sources[""].info
        if len(info.shape) != 2:
            remedy = " (save records of several dimensions as X beside y with np.savez)"
            raise InputFileError(
                f"{path}: a .npy data file must hold a 2-D array"
                f"{remedy if len(info.shape) > 2 else ''}. Found shape {info.shape}."
            )
        numbered = tuple(str(j) for j in range(info.shape[1]))
        by_number = {name: _Column("", j) for j, name in enumerate(numbered)}
        return _ArrayLayout(by_number, info.shape[0], numbered)
    shapes = {name: source.info.shape for name, source in sources.items()}
    columns: dict[str, _Column] = {}
    matrix = "X" in sources and len(shapes["X"]) == 2
    unnamed: tuple[str, ...] = ()
    if matrix:
        n, d = shapes["X"]
        names = [f"x{j}" for j in range(d)]
        if "columns" in sources:
            names = _column_names(arrays, d)
        else:
            unnamed = tuple(names)
        columns = {name: _Column("X", j) for j, name in enumerate(names)}
        others = [name for name in sources if name not in ("X", "columns")]
    else:
        n = shapes[next(iter(shapes))][0] if shapes[next(iter(shapes))] else 0
        others = list(sources)
    for name in others:
        tensor = len(shapes[name]) >= 3
        if tensor and sources[name].info.fortran:
            raise InputFileError(
                f"{path}: array {name!r} of records shaped {shapes[name][1:]} must be stored in "
                f"C order (np.ascontiguousarray before saving). Found Fortran order."
            )
        if (len(shapes[name]) != 1 and not tensor) or shapes[name][0] != n:
            layout = (
                "a 2-D array 'X' plus 1-D arrays of its length"
                if matrix
                else "1-D arrays of one length (or a 2-D 'X', or arrays of records of any "
                "shape, plus such arrays)"
            )
            described = ", ".join(f"{key!r} {shape}" for key, shape in shapes.items())
            raise InputFileError(
                f"{path}: an .npz data file must hold {layout}. Found {described}."
            )
        if name in columns:
            raise InputFileError(f"{path}: column names must be unique. Found {name!r} twice.")
        columns[name] = _Column(name, None)
    return _ArrayLayout(columns, n, unnamed)


def _column_names(arrays: _ArrayFile, d: int) -> list[str]:
    source = arrays.sources["columns"]
    info = source.info
    if len(info.shape) != 1 or info.shape[0] != d or info.dtype.kind not in "US":
        raise InputFileError(
            f"{arrays.path}: array 'columns' must hold {d} strings naming the columns of 'X'. "
            f"Found dtype {info.dtype}, shape {info.shape}."
        )
    values = source.read(0, d)
    names = [v.decode() if isinstance(v, bytes) else str(v) for v in values.tolist()]
    if len(set(names)) != len(names):
        duplicate = next(name for name in names if names.count(name) > 1)
        raise InputFileError(
            f"{arrays.path}: array 'columns' must name each column once. Found {duplicate!r} twice."
        )
    return names


def _array_chunks(
    path: Path, kind: str, selected: Sequence[str], batch_size: int
) -> Iterator[list[NDArray[Any]]]:
    with _ArrayFile(path, kind) as arrays:
        layout = _array_layout(arrays)
        wanted = [layout.columns[name] for name in selected]
        for start in range(0, layout.n_rows, batch_size):
            stop = min(start + batch_size, layout.n_rows)
            read: dict[str, NDArray[Any]] = {}
            for column in wanted:
                if column.array not in read:
                    read[column.array] = arrays.sources[column.array].read(start, stop)
            yield [read[c.array] if c.index is None else read[c.array][:, c.index] for c in wanted]
