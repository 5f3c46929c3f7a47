"""CSV files: UTF-8 text checked before pandas reads it, the field separator, rows as wide
as the header, and numbers read back exactly."""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from numpy.typing import NDArray

from epsstar.audit.data.tables.shared import _check_unique, _clipped, _unreadable
from epsstar.exceptions import InputFileError, InsufficientDataError, InvalidInputError

SEPARATOR_OPTION = "--csv-separator"
"""How the command line sets a CSV file's separator (named by the message refusing a
file that looks separated by something else)."""

_OTHER_SEPARATORS = (";", "\t", "|")


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
