"""Parquet files: their columns (a pandas index left out) and their row groups in chunks."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from numpy.typing import NDArray

from epsstar.audit.data.tables.shared import _unreadable


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
