"""Streaming reader for the tabular records an audit runs a model on.

A table is read from CSV, Parquet, NPZ or NPY in batches of a fixed number of
rows, so memory is bounded by the batch size rather than by the file: a
population file of ten million rows streams in a few hundred MiB.

Columns are chosen by name, and a file must name each column once (at most
:data:`MAX_COLUMNS` of them). Feature columns keep their types (:class:`Features`):
numbers and booleans as stored (int64, float32, float64, bool; a text column whose every
value is a number becomes float64), other text as an object array of ``str`` (for models
such as a scikit-learn pipeline that encodes categories itself), and an array of records
of several dimensions (an image, ``(N, 1, 8, 8)`` in an NPZ) as one tensor column. Numbers
must be finite and, when the model's input type is given, within its range (1e39 is
infinite in float32); text and labels must be present in every row. For a model that
handles missing values itself (``missing=True``), a missing feature value is kept as NaN
instead (infinity is still refused). Problems are reported
in one line naming the file, the column, the 0-based data row and the bad value.

Conventions per format:

* **CSV**: UTF-8 text (a byte-order mark is dropped); the first line is the
  header. Fields are separated by commas unless ``separator`` says otherwise (``";"``,
  what spreadsheets write where the decimal mark is a comma); a file read with commas
  whose header is one field holding ``;``, a tab or ``|`` is refused, naming the
  separator option (:data:`SEPARATOR_OPTION`), rather than read as one column. A first
  column whose header field is empty is the pandas index ``DataFrame.to_csv(path)``
  writes (row labels, not data) and is not a column of the table, as in Parquet.
  Blank lines are skipped. Every row has as many fields as the header: a
  row with more or fewer is refused, naming its line, so that an unquoted decimal
  comma ("1,5") cannot shift the values of a row. The number of rows is unknown
  without reading the file (:attr:`TableSchema.n_rows` is ``None``;
  :func:`count_rows` streams through it).
* **Parquet**: top-level columns, except those that hold a pandas index (the file's
  pandas metadata names them); the row count comes from the footer.
* **NPZ**, either layout:

  - one 1-D array per column, all of one length; the array names are the
    column names, in archive order;
  - a 2-D array ``X`` whose columns are named by an optional 1-D string array
    ``columns`` (else ``"x0"``, ``"x1"``, ...), followed by every other 1-D
    array of the same length, such as ``y``.

* **NPY**: one 2-D numeric array; its columns are named ``"0"``, ``"1"``, ...,
  so the label column is given by its index as a string (``label_column="10"``).

An array whose header announces more bytes than its file holds is refused before
anything is read. NPY files and NPZ members are never loaded whole: uncompressed arrays
(``np.save``, ``np.savez``) are read by offset, in C or Fortran order;
compressed ones (``np.savez_compressed``) are decompressed as they are read.
A compressed 2-D array in Fortran order (what ``DataFrame.to_numpy()`` usually
returns) is decompressed once per column, so it reads about ``d / 2`` times
slower than the same array in C order; store it uncompressed or in C order.

Labels are returned as read: int64, float64, bool or an object array of ``str``.
:func:`read_table` (the trainer's reader) returns the features as one numeric matrix
(float32 when every column is stored as float32, else float64) and refuses text.
"""

from __future__ import annotations

import csv
import math
import os
import struct
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final, Literal, Protocol

import numpy as np
from numpy.typing import DTypeLike, NDArray

from epsstar.audit.model.features import Features
from epsstar.exceptions import InputFileError, InsufficientDataError, InvalidInputError

__all__ = [
    "CLASS_LABELS_OPTION",
    "DATA_FILE_SUFFIXES",
    "MAX_COLUMNS",
    "SEPARATOR_OPTION",
    "Batch",
    "LabelMap",
    "Table",
    "TableSchema",
    "check_separator",
    "count_rows",
    "csv_float_precision",
    "iter_batches",
    "iter_column",
    "label_map_for",
    "parquet_columns",
    "read_column",
    "read_schema",
    "read_table",
    "refuse_nested",
]

DATA_FILE_SUFFIXES: dict[str, str] = {
    ".csv": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".npz": "npz",
    ".npy": "npy",
}

Progress = Callable[[int], None]
_SHOWN = 10  # columns or labels quoted in a message before "..."
MAX_COLUMNS = 1_000_000
"""The most columns a data file may have (a header can announce any number)."""

SEPARATOR_OPTION = "--csv-separator"
"""How the command line sets a CSV file's separator (named by the message refusing a
file that looks separated by something else)."""

_OTHER_SEPARATORS = (";", "\t", "|")


# --------------------------------------------------------------------------- public types


@dataclass(frozen=True, slots=True)
class TableSchema:
    """What a data file holds, read without scanning its rows where the format allows.

    ``n_rows`` is ``None`` for CSV, whose length is unknown until it is read;
    ``separator`` is the CSV field separator (unused by the other formats) and
    ``csv_index`` says that the CSV file's first field, unnamed, is a pandas index left out
    of ``columns``; ``unnamed`` are the columns whose names the reader made up because the
    file records none (``x0``, ``x1``, … of an NPZ ``X``; an NPY array's ``0``, ``1``, …).
    """

    path: Path
    format: str
    columns: tuple[str, ...]
    n_rows: int | None
    separator: str = ","
    csv_index: bool = False
    unnamed: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Batch:
    """Consecutive rows of a table.

    ``features`` are the selected columns, typed as stored (see the module docstring);
    ``labels`` is ``(b,)`` as read.
    """

    features: Features
    labels: NDArray[Any]

    def __len__(self) -> int:
        return int(self.labels.shape[0])


# --------------------------------------------------------------------------- helpers


def _clipped(value: object, width: int = 60) -> str:
    """``repr(value)``, cut to ``width`` characters (a field can be megabytes long)."""
    text = repr(value)
    return text if len(text) <= width else f"{text[: width - 14]}... ({len(text)} chars)"


def _shown(items: Sequence[object], limit: int = _SHOWN) -> str:
    text = ", ".join(_clipped(item) for item in items[:limit])
    return text + (f" and {len(items) - limit} more" if len(items) > limit else "")


def _locate(path: str | os.PathLike[str], what: str = "data file") -> tuple[Path, str]:
    file = Path(path)
    kind = DATA_FILE_SUFFIXES.get(file.suffix.lower())
    if kind is None:
        allowed = ", ".join(DATA_FILE_SUFFIXES)
        raise InputFileError(f"{what} must end in one of {allowed}. Found {str(file)!r}.")
    if not file.is_file():
        if file.is_dir():
            raise InputFileError(f"{what} must be a file, not a directory. Found {str(file)!r}.")
        raise InputFileError(f"{what} must exist and be a file. Found {str(file)!r}.")
    return file, kind


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _unreadable(path: Path, kind: str, error: BaseException) -> InputFileError:
    name = {"csv": "CSV", "parquet": "Parquet", "npz": ".npz", "npy": ".npy"}[kind]
    return InputFileError(f"{path}: must be a readable {name} file. Found: {_first_line(error)}.")


# --------------------------------------------------------------------------- NPY / NPZ arrays


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


# --------------------------------------------------------------------------- CSV / Parquet


def _not_utf8(path: Path, error: UnicodeDecodeError) -> InputFileError:
    byte = error.object[error.start : error.start + 1].hex() or "?"
    return InputFileError(f"{path}: must be UTF-8 text. Found the byte 0x{byte}, which is not.")


def _csv_header(path: Path, separator: str = ",") -> list[str]:
    """The fields of the first non-blank line (a UTF-8 byte-order mark is dropped)."""
    try:
        with path.open(encoding="utf-8-sig", newline="") as stream:
            return next((row for row in csv.reader(stream, delimiter=separator) if row), [])
    except UnicodeDecodeError as error:
        raise _not_utf8(path, error) from None
    except (csv.Error, OSError) as error:
        raise _unreadable(path, "csv", error) from None


_MAGIC = {
    b"PK\x03\x04": "a ZIP archive (such as .npz)",
    b"PAR1": "a Parquet file",
    b"\x93NUMPY": "a .npy array",
    b"\x1f\x8b": "a gzip archive",
}


def _check_text(path: Path) -> None:
    """Refuse a binary file named .csv, saying what it looks like."""
    try:
        with path.open("rb") as stream:
            start = stream.read(8)
    except OSError as error:
        raise _unreadable(path, "csv", error) from None
    for magic, what in _MAGIC.items():
        if start.startswith(magic):
            raise InputFileError(f"{path}: must be a CSV text file. Found {what}.")
    if start.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputFileError(f"{path}: must be UTF-8 text. Found UTF-16 (its byte-order mark).")
    if b"\x00" in start:
        raise InputFileError(f"{path}: must be a CSV text file. Found a binary file (NUL bytes).")


def check_separator(separator: object) -> str:
    """``separator`` if it is one character that can separate CSV fields, else an error."""
    if (
        not isinstance(separator, str)
        or len(separator) != 1
        or separator in '"\r\n'
        or separator.isalnum()
    ):
        raise InvalidInputError(
            f"the CSV separator ({SEPARATOR_OPTION}) must be one character such as ';', "
            f"'\\t' or '|' (not a letter, digit, quote or line break). Found {separator!r}."
        )
    return separator


def _check_one_field(path: Path, header: Sequence[str], separator: str) -> None:
    """Refuse a header read as one field that another separator would split."""
    if len(header) != 1:
        return
    for other in _OTHER_SEPARATORS:
        if other != separator and other in header[0]:
            fields = len(header[0].split(other))
            raise InputFileError(
                f"{path}: fields must be separated by {separator!r}; pass {SEPARATOR_OPTION} "
                f"{other!r} if {other!r} separates them. Found one column "
                f"{_clipped(header[0])} ({fields} fields if separated by {other!r})."
            )


def _csv_columns(path: Path, separator: str = ",") -> tuple[str, ...]:
    """Every column of the header (a pandas index among them, named ``Unnamed: 0``)."""
    import pandas as pd

    _check_text(path)
    _check_one_field(path, _csv_header(path, separator), separator)
    try:
        header = pd.read_csv(path, nrows=0, sep=separator)
    except pd.errors.EmptyDataError:
        raise InsufficientDataError(
            f"{path}: must hold a header line and rows. Found an empty file."
        ) from None
    except UnicodeDecodeError as error:
        raise _not_utf8(path, error) from None
    except (pd.errors.ParserError, OSError, ValueError) as error:
        raise _unreadable(path, "csv", error) from None
    _check_unique(path, _csv_header(path, separator))
    return tuple(str(name) for name in header.columns)


def _check_unique(path: Path, names: Sequence[str]) -> None:
    counts = Counter(names)
    repeated = [name for name, count in counts.items() if count > 1]
    if repeated:
        raise InputFileError(
            f"{path}: column names must be unique. Found {_shown(repeated)} more than once."
        )


def _ragged_line(path: Path, separator: str) -> tuple[int, int, int] | None:
    """(1-based line, fields, header fields) of the first row not as wide as the header."""
    try:
        with path.open(encoding="utf-8-sig", newline="") as stream:
            reader = csv.reader(stream, delimiter=separator)
            width = None
            for row in reader:
                if not row:
                    continue
                if width is None:
                    width = len(row)
                elif len(row) != width:
                    return reader.line_num, len(row), width
    except UnicodeDecodeError as error:
        raise _not_utf8(path, error) from None
    except (csv.Error, OSError) as error:  # such as a field of more than 128 KiB
        raise _unreadable(path, "csv", error) from None
    return None


def _check_csv_widths(path: Path, separator: str) -> None:
    """Refuse a CSV file with a row whose number of fields differs from the header's.

    pandas would drop extra fields and fill missing ones, so a decimal comma ("1,5") would
    shift a row's values silently. pyarrow's parser finds such rows fast; the slower
    :mod:`csv` pass then names the line, or refuses what neither parser can read.
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    try:
        reader = pacsv.open_csv(
            path,
            read_options=pacsv.ReadOptions(autogenerate_column_names=True, block_size=1 << 24),
            parse_options=pacsv.ParseOptions(newlines_in_values=True, delimiter=separator),
            convert_options=pacsv.ConvertOptions(
                include_columns=["f0"], column_types={"f0": pa.string()}, check_utf8=False
            ),
        )
        for _ in reader:
            pass
        return
    except (pa.ArrowException, OSError):
        pass
    found = _ragged_line(path, separator)
    if found is not None:
        line, fields, width = found
        raise InputFileError(
            f"{path}: every row must have as many fields as the header ({width}); a decimal "
            f"comma must be quoted. Found {fields} fields on line {line}."
        )


def csv_float_precision() -> Literal["round_trip"] | None:
    """The pandas CSV number converter that reads back exactly what ``to_csv`` wrote.

    Before pandas 3.0 the default converter is one unit in the last place off for about a
    third of such numbers, so the audit would score other features than the file holds;
    ``round_trip`` reads them exactly. From 3.0 the default is exact (and the option
    deprecated): ``None``.
    """
    import pandas as pd

    return "round_trip" if int(pd.__version__.split(".")[0]) < 3 else None


def _csv_chunks(
    path: Path,
    columns: Sequence[str],
    selected: Sequence[str],
    batch_size: int,
    *,
    header: bool = True,
    separator: str = ",",
    skip: int = 0,
) -> Iterator[list[NDArray[Any]]]:
    """The selected columns in chunks; ``header=False`` reads the first line as data, and
    ``skip`` fields (a pandas index) come before ``columns`` on each line."""
    import pandas as pd

    _check_csv_widths(path, separator)
    positions = [skip + columns.index(name) for name in selected]
    try:
        with pd.read_csv(
            path,
            header=0 if header else None,
            usecols=sorted(set(positions)),
            chunksize=batch_size,
            sep=separator,
            float_precision=csv_float_precision(),
        ) as reader:
            for frame in reader:
                by_position = dict(zip(sorted(set(positions)), frame.columns, strict=True))
                yield [frame[by_position[p]].to_numpy() for p in positions]
    except UnicodeDecodeError as error:
        raise _not_utf8(path, error) from None
    except (pd.errors.ParserError, OSError, ValueError) as error:
        raise _unreadable(path, "csv", error) from None


def _open_parquet(path: Path) -> Any:
    import pyarrow.lib
    import pyarrow.parquet as pq

    try:
        # A read buffer makes pyarrow stream each column chunk instead of loading it whole.
        return pq.ParquetFile(path, buffer_size=1 << 18, pre_buffer=False)
    except (pyarrow.lib.ArrowException, OSError) as error:
        raise _unreadable(path, "parquet", error) from None


def _parquet_chunks(
    path: Path, selected: Sequence[str], batch_size: int
) -> Iterator[list[NDArray[Any]]]:
    import pyarrow.lib

    unique = list(dict.fromkeys(selected))
    with _open_parquet(path) as parquet:
        try:
            for record in parquet.iter_batches(
                batch_size=batch_size, columns=unique, use_threads=False
            ):
                arrays = {
                    name: record.column(i).to_numpy(zero_copy_only=False)
                    for i, name in enumerate(unique)
                }
                yield [arrays[name] for name in selected]
        except (pyarrow.lib.ArrowException, OSError) as error:
            raise _unreadable(path, "parquet", error) from None


# --------------------------------------------------------------------------- schema


def _pandas_index_columns(schema: Any) -> frozenset[str]:
    """The columns that hold a pandas DataFrame's index (``__index_level_0__`` after
    ``df.sample(...).to_parquet(...)``): row labels, not data, so not columns of the table."""
    try:
        metadata = schema.pandas_metadata or {}
    except (ValueError, TypeError):  # pandas metadata that is not JSON
        return frozenset()
    return frozenset(name for name in metadata.get("index_columns", ()) if isinstance(name, str))


def parquet_columns(schema: Any) -> tuple[str, ...]:
    """The column names of a Parquet file's Arrow schema, without a pandas index's."""
    index = _pandas_index_columns(schema)
    return tuple(str(name) for name in schema.names if name not in index)


def read_schema(path: str | os.PathLike[str], *, separator: str = ",") -> TableSchema:
    """The format, column names and (except for CSV) row count of a data file; a CSV
    file's fields are separated by ``separator``."""
    file, kind = _locate(path)
    if kind == "csv":
        separator = check_separator(separator)
        names = _csv_columns(file, separator)
        unnamed = len(names) > 1 and _csv_header(file, separator)[0] == ""
        schema = TableSchema(file, kind, names[unnamed:], None, separator, unnamed)
    elif kind == "parquet":
        with _open_parquet(file) as parquet:
            names = parquet_columns(parquet.schema_arrow)
            schema = TableSchema(file, kind, names, int(parquet.metadata.num_rows))
    else:
        with _ArrayFile(file, kind) as arrays:
            layout = _array_layout(arrays)
            columns = tuple(layout.columns)
            return TableSchema(file, kind, columns, layout.n_rows, unnamed=layout.unnamed)
    if len(schema.columns) > MAX_COLUMNS:
        raise InputFileError(
            f"{file}: must have at most {MAX_COLUMNS} columns. Found {len(schema.columns)}."
        )
    _check_unique(file, schema.columns)
    return schema


def count_rows(path: str | os.PathLike[str], *, separator: str = ",") -> int:
    """The number of data rows: from metadata for Parquet, NPZ and NPY; by streaming for CSV."""
    schema = read_schema(path, separator=separator)
    if schema.n_rows is not None:
        return schema.n_rows
    import pandas as pd

    total = 0
    try:
        with pd.read_csv(
            schema.path, usecols=[0], dtype=str, chunksize=1 << 20, sep=schema.separator
        ) as reader:
            for frame in reader:
                total += len(frame)
    except UnicodeDecodeError as error:
        raise _not_utf8(schema.path, error) from None
    except (pd.errors.ParserError, OSError, ValueError) as error:
        raise _unreadable(schema.path, "csv", error) from None
    return total


# --------------------------------------------------------------------------- validation


def _numeric_column(
    path: Path,
    name: str,
    values: NDArray[Any],
    row0: int,
    dtype: type[np.floating[Any]],
    what: str = "feature column",
) -> NDArray[Any]:
    """The values of one column as numbers (numeric text counts), or an error naming the row."""
    kind = values.dtype.kind
    if kind in "biuf":
        return values
    if kind in "OUS":
        import pandas as pd

        raw = pd.Series(values, copy=False)
        numbers = pd.to_numeric(raw, errors="coerce")
        bad = (numbers.isna() & raw.notna()).to_numpy()
        if not bad.any():
            return numbers.to_numpy(dtype=dtype, na_value=np.nan)
        first = int(np.flatnonzero(bad)[0])
        found = values[first]
    else:
        first, found = 0, values[0] if len(values) else values.dtype
    if isinstance(found, bytes):
        found = found.decode(errors="replace")
    if isinstance(found, np.generic):
        found = found.item()
    raise InvalidInputError(
        f"{path}: {what} {name!r} must be numeric. Found {_clipped(found)} at row {row0 + first}."
    )


def _check_finite(
    path: Path, names: Sequence[str], matrix: NDArray[Any], row0: int, what: str
) -> None:
    """Refuse NaN and infinity, naming the column, the row and the value."""
    finite = np.isfinite(matrix)
    if not finite.all():
        row, col = (int(i) for i in np.argwhere(~finite)[0])
        raise InvalidInputError(
            f"{path}: {what} {names[col]!r} must be finite. Found {matrix[row, col]} at "
            f"row {row0 + row}."
        )


def _typed_column(
    path: Path, name: str, values: NDArray[Any], row0: int, text: bool = True, missing: bool = False
) -> NDArray[Any]:
    """One feature column with its type kept: numbers and booleans as stored (numeric text
    as float64), other text as an object array of ``str`` (refused, naming the first value
    that is not a number, when ``text`` is false); NaN, infinity and missing text are
    refused, naming the row, except that with ``missing`` NaN and missing text are kept
    as NaN."""
    kind = values.dtype.kind
    if kind == "S":
        values = np.char.decode(values, "utf-8", errors="replace")
        kind = values.dtype.kind
    if kind in "OU":
        import pandas as pd

        raw = pd.Series(values, copy=False)
        absent = raw.isna().to_numpy()
        if absent.any() and not missing:
            first = int(np.flatnonzero(absent)[0])
            raise InvalidInputError(
                f"{path}: feature column {name!r} must have a value in every row. Found "
                f"{values[first]} at row {row0 + first}."
            )
        odd = [
            i
            for i, v in enumerate(values)
            if not (absent[i] or isinstance(v, (str, int, float, bool)))
        ]
        if odd:
            raise InvalidInputError(
                f"{path}: feature column {name!r} must hold numbers, booleans or text. Found "
                f"{_clipped(values[odd[0]])} at row {row0 + odd[0]}."
            )
        if not text:
            values = _numeric_column(path, name, values, row0, np.float64)
        else:
            numbers = pd.to_numeric(raw, errors="coerce")
            if (numbers.isna().to_numpy() & ~absent).any():
                kept = [np.nan if gone else str(v) for v, gone in zip(values, absent, strict=True)]
                return np.asarray(kept, dtype=object)
            values = numbers.to_numpy(dtype=np.float64, na_value=np.nan)
    elif kind not in "biuf":
        raise InvalidInputError(
            f"{path}: feature column {name!r} must hold numbers, booleans or text. Found "
            f"dtype {values.dtype} at row {row0}."
        )
    if values.dtype.kind == "f":
        finite = np.isfinite(values) | (missing & np.isnan(values))
        if not finite.all():
            first = np.argwhere(~finite)[0]
            raise InvalidInputError(
                f"{path}: feature column {name!r} must be finite. Found {values[tuple(first)]} at "
                f"row {row0 + int(first[0])}."
            )
    return values


def _feature_columns(
    path: Path,
    names: Sequence[str],
    columns: Sequence[NDArray[Any]],
    row0: int,
    target: np.dtype[Any] | None = None,
    text: bool = True,
    missing: bool = False,
) -> Features:
    typed = tuple(
        _typed_column(path, name, values, row0, text, missing)
        for name, values in zip(names, columns, strict=True)
    )
    if target is not None:
        for name, values in zip(names, typed, strict=True):
            # a value of a type the target holds exactly cannot leave its range
            if values.dtype.kind in "biuf" and not np.can_cast(values.dtype, target, "safe"):
                flat = values.reshape(len(values), -1)
                _check_fits(path, [name] * flat.shape[1], flat, row0, target)
    return Features(tuple(names), typed)


def _check_fits(
    path: Path, names: Sequence[str], matrix: NDArray[Any], row0: int, target: np.dtype[Any]
) -> None:
    """Refuse values beyond the range of the model's input type (1e39 is infinite in float32)."""
    if target.kind == "f":
        low, high = -float(np.finfo(target).max), float(np.finfo(target).max)
        above = matrix > high
    elif target.kind in "iu":
        low, high = float(np.iinfo(target).min), float(np.iinfo(target).max)
        above = matrix >= high + 1.0  # float(2**63 - 1) rounds up to 2**63, out of range
    else:
        return
    outside = above | (matrix < low)
    if outside.any():
        row, col = (int(i) for i in np.argwhere(outside)[0])
        raise InvalidInputError(
            f"{path}: feature column {names[col]!r} must fit the model's input type {target} "
            f"(from {low:g} to {high:g}). Found {matrix[row, col]} at row {row0 + row}."
        )


def refuse_nested(path: str | os.PathLike[str], what: str, values: NDArray[Any], row0: int) -> None:
    """Refuse values that are lists, tables or arrays (a Parquet list, struct or map column):
    they name no class and no slice. ``what`` names the column (``label column 'y'``)."""
    if values.dtype.kind != "O":
        return
    for index, value in enumerate(values):
        if isinstance(value, list | tuple | dict | np.ndarray):
            raise InvalidInputError(
                f"{path}: {what} must hold one number, boolean or text per row, not lists or "
                f"tables. Found {_clipped(value)} at row {row0 + index}."
            )


def _label_vector(path: Path, name: str, values: NDArray[Any], row0: int) -> NDArray[Any]:
    refuse_nested(path, f"label column {name!r}", values, row0)
    kind = values.dtype.kind
    if kind in "iu":
        return values.astype(np.int64, copy=False)
    if kind == "b":
        return values.astype(np.bool_, copy=False)
    if kind == "f":
        labels = values.astype(np.float64, copy=False)
        missing = np.isnan(labels)
    else:
        if kind == "S":
            values = np.char.decode(values, "utf-8", errors="replace")
        labels = values.astype(object, copy=False)
        import pandas as pd

        missing = np.asarray(pd.isna(labels), dtype=bool)
    if missing.any():
        first = int(np.flatnonzero(missing)[0])
        raise InvalidInputError(
            f"{path}: label column {name!r} must have a value in every row. Found "
            f"{labels[first]} at row {row0 + first}."
        )
    return labels


def _select(schema: TableSchema, label_column: str, features: Sequence[str] | None) -> list[str]:
    path, available = schema.path, schema.columns
    if label_column not in available:
        raise InputFileError(
            f"{path}: label column {label_column!r} must be one of its columns. Found "
            f"columns {_shown(available)}."
        )
    if features is None:
        names = [name for name in available if name != label_column]
    else:
        if isinstance(features, str):
            raise InvalidInputError(
                f"features must be a sequence of column names. Found the string {features!r}."
            )
        names = [str(name) for name in features]
        missing = [name for name in names if name not in available]
        if missing:
            raise InputFileError(
                f"{path}: feature column {missing[0]!r} must be one of its columns. "
                f"Found columns {_shown(available)}."
            )
        if label_column in names:
            raise InvalidInputError(
                f"{path}: the label column {label_column!r} must not also be a feature. "
                f"Found it in features."
            )
        repeated = [name for name in names if names.count(name) > 1]
        if repeated:
            raise InvalidInputError(
                f"features must name each column once. Found {repeated[0]!r} twice."
            )
    if not names:
        raise InvalidInputError(
            f"{path}: at least one feature column is needed besides {label_column!r}. Found none."
        )
    return names


def _rebatch(batches: Iterator[Batch], size: int) -> Iterator[Batch]:
    """Regroup batches into exactly ``size`` rows each (the last may be shorter)."""
    pending: list[Batch] = []
    held = 0
    for batch in batches:
        if not pending and len(batch) == size:
            yield batch
            continue
        pending.append(batch)
        held += len(batch)
        while held >= size:
            features = Features.concatenate([b.features for b in pending])
            labels = np.concatenate([b.labels for b in pending])
            yield Batch(features.slice(0, size), labels[:size])
            rest_features = Features(
                features.names, tuple(column[size:].copy() for column in features.columns)
            )
            rest = Batch(rest_features, labels[size:].copy())
            pending, held = ([rest], len(rest)) if len(rest) else ([], 0)
    if held:
        yield Batch(
            Features.concatenate([b.features for b in pending]),
            np.concatenate([b.labels for b in pending]),
        )


def iter_batches(
    path: str | os.PathLike[str],
    *,
    label_column: str,
    features: Sequence[str] | None = None,
    batch_size: int = 65_536,
    progress: Progress | None = None,
    input_dtype: DTypeLike | None = None,
    text: bool = True,
    missing: bool = False,
    separator: str = ",",
) -> Iterator[Batch]:
    """Stream a table's rows as :class:`Batch` es of ``batch_size`` rows (the last may be fewer).

    ``features`` selects and orders the feature columns (default: every column
    but the label, in file order). ``progress``, if given, is called after each
    batch with the number of rows in it, e.g. ``lambda n: bar.advance(task, n)``
    with a rich progress bar whose total is :func:`count_rows`. ``input_dtype``, if
    given, is the model's input type: every feature must fit its range (1e39 would
    become infinite in float32, -1 would wrap around in uint8). With ``text=False`` (a
    model that takes numbers only) a column that is not numeric is refused, naming the
    file, the row and the value; otherwise it is kept as text. With ``missing=True`` (a
    model that handles missing values itself) a missing feature value is kept as NaN
    rather than refused. ``separator`` separates a CSV file's fields.

    The file is opened and its columns are checked before the first batch is
    requested; a file without rows raises :class:`InsufficientDataError`.
    """
    options = (input_dtype, text, missing, separator)
    return _open_batches(path, label_column, features, batch_size, progress, *options)[1]


@dataclass(frozen=True, slots=True)
class Table:
    """A whole table in memory: ``features`` ``(n, d)`` and ``labels`` ``(n,)`` as
    :func:`iter_batches` returns them, and the names of the feature columns, in order."""

    path: Path
    feature_names: tuple[str, ...]
    features: NDArray[Any]
    labels: NDArray[Any]


def read_table(
    path: str | os.PathLike[str],
    *,
    label_column: str,
    features: Sequence[str] | None = None,
    batch_size: int = 65_536,
    input_dtype: DTypeLike | None = None,
) -> Table:
    """Every row of a table, read and checked as by :func:`iter_batches`."""
    names, batches = _open_batches(path, label_column, features, batch_size, None, input_dtype)
    read = list(batches)
    columns = Features.concatenate([batch.features for batch in read])
    text = [n for n, c in zip(columns.names, columns.columns, strict=True) if c.dtype == object]
    if text:
        raise InvalidInputError(
            f"{path}: feature column {text[0]!r} must be numeric to be read as a matrix. "
            f"Found text such as {_clipped(columns.column(text[0])[0])}."
        )
    return Table(
        path=Path(path),
        feature_names=tuple(names),
        features=columns.matrix(),
        labels=np.concatenate([batch.labels for batch in read]),
    )


def _chunks(
    schema: TableSchema, selected: Sequence[str], size: int, *, header: bool = True
) -> Iterator[list[NDArray[Any]]]:
    """The raw values of the ``selected`` columns, in chunks of at most ``size`` rows."""
    if schema.format == "csv":
        return _csv_chunks(
            schema.path,
            schema.columns,
            selected,
            size,
            header=header,
            separator=schema.separator,
            skip=int(schema.csv_index),
        )
    if schema.format == "parquet":
        return _parquet_chunks(schema.path, selected, size)
    return _array_chunks(schema.path, schema.format, selected, size)


def _open_batches(
    path: str | os.PathLike[str],
    label_column: str,
    features: Sequence[str] | None,
    batch_size: int,
    progress: Progress | None,
    input_dtype: DTypeLike | None = None,
    text: bool = True,
    missing: bool = False,
    separator: str = ",",
) -> tuple[list[str], Iterator[Batch]]:
    """The feature names and the batches; the arguments and columns are checked now."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
        raise InvalidInputError(f"batch_size must be an integer ≥ 1. Found {batch_size!r}.")
    if batch_size < 1:
        raise InvalidInputError(f"batch_size must be an integer ≥ 1. Found {batch_size}.")
    schema = read_schema(path, separator=separator)
    names = _select(schema, label_column, features)
    size = int(batch_size)
    chunks = _chunks(schema, [*names, label_column], size)
    target = None if input_dtype is None else np.dtype(input_dtype)
    checks = (target, text, missing)
    stream = _stream(schema.path, names, label_column, chunks, checks, size, progress)
    return names, stream


def _stream(
    path: Path,
    names: list[str],
    label_column: str,
    chunks: Iterator[list[NDArray[Any]]],
    checks: tuple[np.dtype[Any] | None, bool, bool],
    size: int,
    progress: Progress | None,
) -> Iterator[Batch]:
    """Checked batches; ``checks`` are the model's input type (numbers must fit it),
    whether text columns are kept and whether missing values are."""

    def validated() -> Iterator[Batch]:
        row0 = 0
        for columns in chunks:
            rows = len(columns[-1])
            if rows == 0:
                continue
            typed = _feature_columns(path, names, columns[:-1], row0, *checks)
            labels = _label_vector(path, label_column, columns[-1], row0)
            yield Batch(typed, labels)
            row0 += rows
        if row0 == 0:
            raise InsufficientDataError(f"{path}: must hold at least one row. Found none.")

    for batch in _rebatch(validated(), size):
        yield batch
        if progress is not None:
            progress(len(batch))


# --------------------------------------------------------------------------- one column


def iter_column(
    path: str | os.PathLike[str], name: str, *, batch_size: int = 1 << 20, separator: str = ","
) -> Iterator[NDArray[Any]]:
    """The values of the column ``name`` as stored, in chunks of at most ``batch_size`` rows
    (``separator``: a CSV file's field separator).

    The file and the column are checked now, before the first chunk is asked for.
    """
    schema = read_schema(path, separator=separator)
    if name not in schema.columns:
        raise InputFileError(
            f"{schema.path}: column {name!r} must be one of its columns. Found columns "
            f"{_shown(schema.columns)}."
        )
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidInputError(f"batch_size must be an integer ≥ 1. Found {batch_size!r}.")
    return (chunk[0] for chunk in _chunks(schema, [name], batch_size))


def _only_column(schema: TableSchema) -> str:
    columns = schema.columns
    if len(columns) != 1:
        raise InputFileError(
            f"{schema.path}: a file of values must have exactly one column. Found "
            f"{len(columns)}: {_shown(columns, 5)}."
        )
    return columns[0]


def _is_number(text: str) -> bool:
    try:
        return not math.isnan(float(text))
    except ValueError:
        return False


def _npy_column(file: Path) -> NDArray[Any]:
    """The values of a .npy file holding a 1-D array or one column."""
    with _ArrayFile(file, "npy") as arrays:
        source = arrays.sources[""]
        shape = source.info.shape
        if len(shape) not in (1, 2) or (len(shape) == 2 and shape[1] != 1):
            raise InputFileError(
                f"{file}: a file of values must hold a 1-D array or one column. "
                f"Found shape {shape}."
            )
        return source.read(0, shape[0]).reshape(-1)


def read_column(path: str | os.PathLike[str], *, name: str = "values") -> NDArray[np.float64]:
    """The numbers of a one-column table (such as per-record losses), as finite float64.

    Any format of this module: a ``.npy`` file holds a 1-D array (or one column); a CSV
    file's header line is optional (a first line that is a number is data); Parquet and
    NPZ files hold one column. ``name`` names the argument in the messages about the
    path itself.
    """
    file, kind = _locate(path, name)
    if kind == "npy":
        label, chunks = "0", iter([[_npy_column(file)]])
    else:
        schema = read_schema(file)
        first = _only_column(schema)
        header = not (kind == "csv" and _is_number(first))
        chunks = _chunks(schema, [first], 1 << 20, header=header)
        label = first if header else "0"
    parts: list[NDArray[np.float64]] = []
    row0 = 0
    for (values,) in chunks:
        column = _numeric_column(file, label, values, row0, np.float64, "column")
        _check_finite(file, [label], column.reshape(-1, 1), row0, "column")
        parts.append(np.asarray(column, dtype=np.float64))
        row0 += len(column)
    if row0 == 0:
        raise InsufficientDataError(f"{file}: must hold at least one row. Found none.")
    return np.concatenate(parts)


# --------------------------------------------------------------------------- labels


def _as_python(value: object) -> object:
    return value.item() if isinstance(value, np.generic) else value


def _numeric_key(value: object) -> float | None:
    """A label as a number (1, 1.0, "1", "1.0", True all give 1.0), or None if it is not one."""
    value = _as_python(value)
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in ("true", "false"):
            return 1.0 if text.lower() == "true" else 0.0
        try:
            return float(text)
        except ValueError:
            return None
    if isinstance(value, (bool, int, float)):
        return float(value)
    return None


def _text_key(value: object) -> str:
    """A label as text, with whole-number floats written as integers ("1.0" -> "1")."""
    value = _as_python(value)
    if isinstance(value, bytes):
        return value.decode(errors="replace").strip()
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


#: The option naming the classes of a model's outputs, in order, when its file records none.
CLASS_LABELS_OPTION: Final = "--class-labels"
#: The same for one model of an ``audit-many`` manifest: its column (CSV) or key (TOML).
MANIFEST_CLASS_LABELS: Final = "a class_labels column"


@dataclass(frozen=True, slots=True)
class LabelMap:
    """The model's classes, in the order of its output columns, and how raw labels match them.

    When every class is a number (booleans count as 0/1), labels are compared
    as numbers: ``1``, ``1.0``, ``"1"``, ``"1.0"`` and ``True`` all match class
    ``1``. Otherwise labels are compared as text, with surrounding spaces removed
    and whole-number floats written as integers (``1.0`` matches class ``"1"``).
    """

    classes: tuple[object, ...]
    #: Whether the classes are the model's own (``False``: ``0 … K−1`` stand in for labels
    #: the model file does not record, and a refusal says how to name them).
    named: bool = field(default=True, compare=False)
    numeric: bool = field(init=False, repr=False, compare=False)
    _lookup: dict[object, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        classes = tuple(_as_python(value) for value in self.classes)
        if not classes:
            raise InvalidInputError("classes must hold at least one class. Found none.")
        numeric = all(isinstance(value, (bool, int, float)) for value in classes)
        keys: list[object] = []
        for value in classes:
            if numeric:
                number = _numeric_key(value)
                if number is None or math.isnan(number):
                    raise InvalidInputError(f"classes must not be missing. Found {value!r}.")
                keys.append(number)
            else:
                keys.append(_text_key(value))
        lookup: dict[object, int] = {}
        for index, key in enumerate(keys):
            if key in lookup:
                raise InvalidInputError(
                    f"classes must be distinct. Found {classes[lookup[key]]!r} and "
                    f"{classes[index]!r}, which compare equal."
                )
            lookup[key] = index
        object.__setattr__(self, "classes", classes)
        object.__setattr__(self, "numeric", numeric)
        object.__setattr__(self, "_lookup", lookup)

    def __len__(self) -> int:
        return len(self.classes)

    def encode(
        self, raw: NDArray[Any] | Sequence[object], *, source: str | None = None
    ) -> NDArray[np.int64]:
        """Class indices 0..K−1 of ``raw`` labels; unknown or missing labels raise, naming
        ``source`` (the file and column they come from) when given."""
        where = f"{source}: " if source else ""
        import pandas as pd

        values = np.asarray(raw)
        if values.ndim != 1:
            values = values.reshape(-1)
        if values.dtype.kind == "S":
            values = np.char.decode(values, "utf-8", errors="replace")
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        table = np.empty(len(uniques), dtype=np.int64)
        unknown: list[object] = []
        for position, value in enumerate(uniques):
            key = _numeric_key(value) if self.numeric else _text_key(value)
            index = self._lookup.get(key, -1) if key is not None else -1
            table[position] = index
            if index < 0:
                unknown.append(_as_python(value))
        if (codes < 0).any():
            first = int(np.flatnonzero(codes < 0)[0])
            raise InvalidInputError(
                f"{where}labels must not be missing. Found {values[first]} at index {first}."
            )
        if unknown:
            raise InvalidInputError(
                f"{where}labels must be classes of the model ({_shown(list(self.classes))})"
                f"{self._naming_hint(unknown)}. Found "
                f"{len(unknown)} unknown label value(s): {_shown(unknown, 5)}."
            )
        return np.ascontiguousarray(table[codes], dtype=np.int64)

    def _naming_hint(self, unknown: Sequence[object]) -> str:
        """How to name the classes of a model that records none, for the refusal of
        ``unknown`` labels (the sorted labels when they are as many as the classes: the
        order of the scikit-learn wrappers of LightGBM and XGBoost, whose label encoder
        sorts them)."""
        if self.named:
            return ""
        hint = (
            f"; the model file records no class labels: pass {CLASS_LABELS_OPTION} with them "
            f"in the order of its outputs (in an audit-many manifest, {MANIFEST_CLASS_LABELS})"
        )
        if len(unknown) != len(self.classes):
            return hint
        ordered = ",".join(sorted(str(value) for value in unknown))
        return (
            f"{hint} (sorted, as LightGBM and XGBoost number them: {CLASS_LABELS_OPTION} {ordered})"
        )


def label_map_for(model_classes: Sequence[object] | None, n_outputs: int) -> LabelMap:
    """The :class:`LabelMap` of a model with ``n_outputs`` output columns.

    ``model_classes`` are the classes in output-column order (as a scikit-learn
    ``classes_``); ``None`` means 0..K−1. A single output column is a binary
    model with two classes.
    """
    if isinstance(n_outputs, bool) or not isinstance(n_outputs, (int, np.integer)):
        raise InvalidInputError(f"n_outputs must be an integer ≥ 1. Found {n_outputs!r}.")
    if n_outputs < 1:
        raise InvalidInputError(f"n_outputs must be an integer ≥ 1. Found {n_outputs}.")
    expected = 2 if n_outputs == 1 else int(n_outputs)
    if model_classes is None:
        return LabelMap(tuple(range(expected)), named=False)
    classes = tuple(np.asarray(model_classes, dtype=object).reshape(-1).tolist())
    if len(classes) != expected:
        raise InvalidInputError(
            f"model classes (those the model file records, or {CLASS_LABELS_OPTION}) must "
            f"number {expected} for {n_outputs} output column(s). Found {len(classes)}: "
            f"{_shown(list(classes))}."
        )
    return LabelMap(classes)
