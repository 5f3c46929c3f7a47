"""Tests for the streaming tabular reader and label maps (epsstar.audit.data.tables)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from epsstar.audit.data.tables import (
    Batch,
    LabelMap,
    TableSchema,
    count_rows,
    iter_batches,
    label_map_for,
    read_column,
    read_schema,
    read_table,
)
from epsstar.exceptions import InputFileError, InsufficientDataError, InvalidInputError

N_ROWS = 17
FEATURES = ["a", "b", "c"]


def _table(n: int = N_ROWS, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=FEATURES)
    frame.insert(1, "y", rng.integers(0, 3, n))
    return frame  # columns a, y, b, c: the label sits between features


def _write(frame: pd.DataFrame, directory: Path, kind: str) -> tuple[Path, str]:
    """Write ``frame`` in one format; returns the path and the label column's name there."""
    if kind == "csv":
        path = directory / "t.csv"
        frame.to_csv(path, index=False)
    elif kind == "parquet":
        path = directory / "t.parquet"
        frame.to_parquet(path, index=False)
    elif kind == "npz-columns":
        path = directory / "columns.npz"
        np.savez(path, **{name: frame[name].to_numpy() for name in frame.columns})
    elif kind == "npz-matrix":
        path = directory / "matrix.npz"
        matrix = np.asfortranarray(frame[FEATURES].to_numpy())  # as pandas hands it out
        np.savez(path, X=matrix, y=frame["y"].to_numpy(), columns=np.array(FEATURES))
    elif kind == "npz-compressed":
        path = directory / "compressed.npz"
        matrix = frame[FEATURES].to_numpy()
        np.savez_compressed(path, X=matrix, y=frame["y"].to_numpy(), columns=np.array(FEATURES))
    elif kind == "npz-compressed-fortran":
        path = directory / "compressed_f.npz"
        matrix = np.asfortranarray(frame[FEATURES].to_numpy())
        np.savez_compressed(path, X=matrix, y=frame["y"].to_numpy(), columns=np.array(FEATURES))
    else:
        assert kind == "npy"
        path = directory / "t.npy"
        np.save(path, frame[[*FEATURES, "y"]].to_numpy(dtype=np.float64))
        return path, "3"
    return path, "y"


KINDS = [
    "csv",
    "parquet",
    "npz-columns",
    "npz-matrix",
    "npz-compressed",
    "npz-compressed-fortran",
    "npy",
]


def _collect(batches: list[Batch]) -> tuple[np.ndarray, np.ndarray]:
    return (
        np.concatenate([b.features.matrix() for b in batches]),
        np.concatenate([b.labels for b in batches]),
    )


# --------------------------------------------------------------------------- formats agree


@pytest.mark.parametrize("kind", KINDS)
def test_every_format_gives_the_same_table(tmp_path: Path, kind: str) -> None:
    frame = _table()
    path, label = _write(frame, tmp_path, kind)
    batches = list(iter_batches(path, label_column=label, batch_size=5))
    assert [len(b) for b in batches] == [5, 5, 5, 2]
    features, labels = _collect(batches)
    np.testing.assert_array_equal(features, frame[FEATURES].to_numpy())
    assert labels.tolist() == frame["y"].tolist()
    for batch in batches:
        assert batch.features.matrix().dtype == np.float64
        assert batch.features.matrix().flags.c_contiguous
        assert batch.features.matrix().shape == (len(batch), 3)
    assert count_rows(path) == N_ROWS


@given(batch_size=st.integers(min_value=1, max_value=N_ROWS + 5))
def test_any_batch_size_concatenates_to_the_whole_table(
    tmp_path_factory: pytest.TempPathFactory, batch_size: int
) -> None:
    directory = _written_once(tmp_path_factory)
    expected = _table()[FEATURES].to_numpy()
    for kind in KINDS:
        path, label = _write_paths[kind]
        batches = list(iter_batches(directory / path, label_column=label, batch_size=batch_size))
        sizes = [len(b) for b in batches]
        assert all(size == batch_size for size in sizes[:-1]), (kind, sizes)
        assert 1 <= sizes[-1] <= batch_size
        features, labels = _collect(batches)
        np.testing.assert_array_equal(features, expected, err_msg=kind)
        assert labels.astype(np.int64).tolist() == _table()["y"].tolist(), kind


_write_paths: dict[str, tuple[str, str]] = {}
_written: dict[str, Path] = {}


def _written_once(factory: pytest.TempPathFactory) -> Path:
    """One directory holding the table in every format, shared by hypothesis examples."""
    if "dir" not in _written:
        directory = factory.mktemp("formats")
        for kind in KINDS:
            path, label = _write(_table(), directory, kind)
            _write_paths[kind] = (path.name, label)
        _written["dir"] = directory
    return _written["dir"]


def test_parquet_row_groups_are_regrouped_into_full_batches(tmp_path: Path) -> None:
    frame = _table(50)
    path = tmp_path / "groups.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=7)
    batches = list(iter_batches(path, label_column="y", batch_size=10))
    assert [len(b) for b in batches] == [10] * 5
    features, _ = _collect(batches)
    np.testing.assert_array_equal(features, frame[FEATURES].to_numpy())


# --------------------------------------------------------------------------- schema


def test_read_schema_per_format(tmp_path: Path) -> None:
    frame = _table()
    csv, _ = _write(frame, tmp_path, "csv")
    assert read_schema(csv) == TableSchema(csv, "csv", ("a", "y", "b", "c"), None)
    parquet, _ = _write(frame, tmp_path, "parquet")
    assert read_schema(parquet) == TableSchema(parquet, "parquet", ("a", "y", "b", "c"), N_ROWS)
    matrix, _ = _write(frame, tmp_path, "npz-matrix")
    assert read_schema(matrix).columns == ("a", "b", "c", "y")
    assert read_schema(matrix).unnamed == ()  # named by its 'columns' array
    npy, _ = _write(frame, tmp_path, "npy")
    numbered = ("0", "1", "2", "3")  # names the reader makes up: the file records none
    assert read_schema(npy) == TableSchema(npy, "npy", numbered, N_ROWS, unnamed=numbered)


def test_unnamed_npz_matrix_columns_are_x0_x1(tmp_path: Path) -> None:
    path = tmp_path / "plain.npz"
    np.savez(path, X=np.ones((4, 2)), label=np.arange(4))
    assert read_schema(path).columns == ("x0", "x1", "label")
    (batch,) = iter_batches(path, label_column="label", features=["x1"])
    assert batch.features.matrix().shape == (4, 1)
    assert batch.labels.tolist() == [0, 1, 2, 3]


# --------------------------------------------------------------------------- selection


@pytest.mark.parametrize("kind", KINDS)
def test_features_are_selected_and_ordered(tmp_path: Path, kind: str) -> None:
    frame = _table()
    path, label = _write(frame, tmp_path, kind)
    names = ["c", "a"] if kind != "npy" else ["2", "0"]
    features, _ = _collect(list(iter_batches(path, label_column=label, features=names)))
    np.testing.assert_array_equal(features, frame[["c", "a"]].to_numpy())


def test_missing_label_column_lists_the_columns(tmp_path: Path) -> None:
    path, _ = _write(_table(), tmp_path, "parquet")
    with pytest.raises(InputFileError, match=r"label column 'target'.*Found columns 'a', 'y'"):
        iter_batches(path, label_column="target")


def test_missing_feature_column(tmp_path: Path) -> None:
    path, _ = _write(_table(), tmp_path, "csv")
    with pytest.raises(InputFileError, match=r"feature column 'zz' must be one of"):
        iter_batches(path, label_column="y", features=["a", "zz"])


def test_label_cannot_be_a_feature(tmp_path: Path) -> None:
    path, _ = _write(_table(), tmp_path, "csv")
    with pytest.raises(InvalidInputError, match="must not also be a feature"):
        iter_batches(path, label_column="y", features=["a", "y"])


@pytest.mark.parametrize("size", [0, -3, 2.5, True])
def test_batch_size_must_be_a_positive_integer(tmp_path: Path, size: object) -> None:
    path, _ = _write(_table(), tmp_path, "csv")
    with pytest.raises(InvalidInputError, match="batch_size"):
        iter_batches(path, label_column="y", batch_size=size)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- bad values


def test_non_numeric_feature_names_column_value_and_row(tmp_path: Path) -> None:
    path = tmp_path / "text.csv"
    path.write_text("a,b,y\n1,2,0\n3,4,1\n5,oops,1\n")
    with pytest.raises(
        InvalidInputError, match=r"feature column 'b' must be numeric. Found 'oops' at row 2"
    ):
        list(iter_batches(path, label_column="y", text=False))
    (batch,) = iter_batches(path, label_column="y")
    assert batch.features.column("b").tolist() == ["2", "4", "oops"]


def test_numeric_text_in_parquet_counts_as_numeric(tmp_path: Path) -> None:
    path = tmp_path / "text.parquet"
    pq.write_table(pa.table({"a": ["1.5", "2"], "y": [0, 1]}), path)
    (batch,) = iter_batches(path, label_column="y")
    assert batch.features.matrix()[:, 0].tolist() == [1.5, 2.0]


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", ""])
def test_non_finite_feature_names_column_and_row(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "bad.csv"
    rows = "\n".join(f"{i},{i},{i % 2}" for i in range(10))
    path.write_text("a,b,y\n" + rows + f"\n1,{bad},0\n")
    with pytest.raises(InvalidInputError, match=r"feature column 'b' must be finite.*at row 10\."):
        list(iter_batches(path, label_column="y", batch_size=4))


def test_missing_values_are_kept_as_nan_for_a_model_that_handles_them(tmp_path: Path) -> None:
    path = tmp_path / "gaps.csv"
    path.write_text("a,b,colour,y\n1,,red,0\n2,nan,,1\n3,0.5,blue,0\n")
    with pytest.raises(InvalidInputError, match=r"feature column 'b' must be finite.*at row 0\."):
        list(iter_batches(path, label_column="y"))
    (batch,) = iter_batches(path, label_column="y", missing=True)
    b, colour = batch.features.column("b"), batch.features.column("colour")
    assert b.dtype == np.float64
    assert np.isnan(b[:2]).all()
    assert b[2] == 0.5
    assert colour[0] == "red"
    assert colour[2] == "blue"
    assert isinstance(colour[1], float)
    assert np.isnan(colour[1])
    # infinity is no missing value: still refused
    path.write_text("a,b,y\n1,inf,0\n2,,1\n")
    with pytest.raises(InvalidInputError, match=r"'b' must be finite. Found inf at row 0"):
        list(iter_batches(path, label_column="y", missing=True))


@pytest.mark.parametrize("kind", ["parquet", "npz-columns", "npy"])
def test_non_finite_feature_row_index_is_global(tmp_path: Path, kind: str) -> None:
    frame = _table()
    frame.loc[13, "b"] = np.inf
    path, label = _write(frame, tmp_path, kind)
    column = "1" if kind == "npy" else "b"
    with pytest.raises(InvalidInputError, match=rf"'{column}' must be finite. Found inf at row 13"):
        list(iter_batches(path, label_column=label, batch_size=5))


@pytest.mark.parametrize("kind", ["csv", "parquet", "npz-columns"])
def test_missing_label_names_the_row(tmp_path: Path, kind: str) -> None:
    frame = _table().astype({"y": float})
    frame.loc[6, "y"] = np.nan
    path, label = _write(frame, tmp_path, kind)
    with pytest.raises(InvalidInputError, match=r"label column 'y' must have a value.*row 6\."):
        list(iter_batches(path, label_column=label, batch_size=4))


def test_missing_string_label(tmp_path: Path) -> None:
    path = tmp_path / "labels.parquet"
    pq.write_table(pa.table({"a": [1.0, 2.0, 3.0], "y": ["u", None, "v"]}), path)
    with pytest.raises(InvalidInputError, match=r"must have a value in every row.*row 1\."):
        list(iter_batches(path, label_column="y"))


def test_string_labels_are_object_arrays_in_every_format(tmp_path: Path) -> None:
    labels = np.array(["cat", "dog", "cat"])
    csv = tmp_path / "s.csv"
    csv.write_text("a,y\n1,cat\n2,dog\n3,cat\n")
    parquet = tmp_path / "s.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3], "y": labels.tolist()}), parquet)
    npz = tmp_path / "s.npz"
    np.savez(npz, a=np.arange(3), y=labels)
    for path in (csv, parquet, npz):
        (batch,) = iter_batches(path, label_column="y")
        assert batch.labels.dtype == object
        assert batch.labels.tolist() == ["cat", "dog", "cat"]


# --------------------------------------------------------------------------- empty / broken


def test_empty_files(tmp_path: Path) -> None:
    header_only = tmp_path / "header.csv"
    header_only.write_text("a,b,y\n")
    with pytest.raises(InsufficientDataError, match="at least one row"):
        list(iter_batches(header_only, label_column="y"))
    assert count_rows(header_only) == 0
    blank = tmp_path / "blank.csv"
    blank.write_text("")
    with pytest.raises(InsufficientDataError, match="empty file"):
        iter_batches(blank, label_column="y")
    parquet = tmp_path / "empty.parquet"
    _table(0).to_parquet(parquet, index=False)
    with pytest.raises(InsufficientDataError):
        list(iter_batches(parquet, label_column="y"))
    npy = tmp_path / "empty.npy"
    np.save(npy, np.empty((0, 3)))
    with pytest.raises(InsufficientDataError):
        list(iter_batches(npy, label_column="2"))


@pytest.mark.parametrize("suffix", [".parquet", ".npz", ".npy"])
def test_garbage_bytes_are_an_input_file_error(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"garbage{suffix}"
    path.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(InputFileError, match=rf"{path.name}: must be a readable"):
        iter_batches(path, label_column="y")
    with pytest.raises(InputFileError):
        count_rows(path)


def test_truncated_npy_is_an_input_file_error(tmp_path: Path) -> None:
    path = tmp_path / "cut.npy"
    np.save(path, np.ones((100, 3)))
    path.write_bytes(path.read_bytes()[:-50])
    with pytest.raises(InputFileError, match="truncated"):
        list(iter_batches(path, label_column="2"))


def test_missing_file_and_unknown_suffix(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="must exist"):
        read_schema(tmp_path / "absent.csv")
    other = tmp_path / "data.txt"
    other.write_text("a\n1\n")
    with pytest.raises(InputFileError, match="must end in one of"):
        read_schema(other)


def test_npz_of_mixed_shapes_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "mixed.npz"
    np.savez(path, a=np.ones(3), b=np.ones((3, 2)))
    with pytest.raises(InputFileError, match="1-D arrays of one length"):
        read_schema(path)


def test_npy_must_be_two_dimensional(tmp_path: Path) -> None:
    path = tmp_path / "flat.npy"
    np.save(path, np.ones(5))
    with pytest.raises(InputFileError, match="2-D array. Found shape"):
        read_schema(path)


# --------------------------------------------------------------------------- dtype, progress


def test_float32_sources_stay_float32(tmp_path: Path) -> None:
    path = tmp_path / "f32.npz"
    np.savez(path, X=np.ones((6, 2), dtype=np.float32), y=np.zeros(6))
    (batch,) = iter_batches(path, label_column="y")
    assert batch.features.matrix().dtype == np.float32
    mixed = tmp_path / "mixed.parquet"
    pq.write_table(pa.table({"a": pa.array([1.0], pa.float32()), "b": [2.0], "y": [0]}), mixed)
    (batch,) = iter_batches(mixed, label_column="y")
    assert batch.features.matrix().dtype == np.float64
    (batch,) = iter_batches(mixed, label_column="y", features=["a"])
    assert batch.features.matrix().dtype == np.float32


def test_progress_is_called_with_rows_per_batch(tmp_path: Path) -> None:
    path, _ = _write(_table(), tmp_path, "parquet")
    seen: list[int] = []
    for _ in iter_batches(path, label_column="y", batch_size=6, progress=seen.append):
        pass
    assert seen == [6, 6, 5]
    assert sum(seen) == count_rows(path)


def test_count_rows_streams_csv(tmp_path: Path) -> None:
    path = tmp_path / "n.csv"
    path.write_text("a,y\n" + "".join(f"{i},{i % 2}\n" for i in range(1234)) + "\n\n")
    assert count_rows(path) == 1234


# --------------------------------------------------------------------------- memory


def _big_files(directory: Path, rows: int, block: int) -> tuple[Path, Path]:
    """A ``rows`` × (10 features + label) table as Parquet and CSV, written a block at a time."""
    rng = np.random.default_rng(7)
    columns = {f"f{j}": np.round(rng.normal(size=block), 6) for j in range(10)}
    columns["y"] = rng.integers(0, 2, size=block)
    table = pa.table(columns)
    parquet = directory / "big.parquet"
    with pq.ParquetWriter(parquet, table.schema) as writer:
        for _ in range(rows // block):
            writer.write_table(table)  # row groups of ``block`` rows
    csv = directory / "big.csv"
    block_file = directory / "block.csv"
    pacsv.write_csv(table, block_file)
    header, _, rest = block_file.read_bytes().partition(b"\n")
    with csv.open("wb") as stream:
        stream.write(header + b"\n")
        for _ in range(rows // block):
            stream.write(rest)
    return parquet, csv


def _peak_growth(path: Path, batch_size: int) -> tuple[int, int]:
    """Rows read, and the peak bytes held meanwhile by numpy/pandas plus Arrow's pool.

    tracemalloc sees every numpy and pandas allocation but not Arrow's own pool,
    which ``pa.total_allocated_bytes`` reports; their sum is exact and repeatable,
    unlike the process RSS, whose peak is a lifetime high-water mark and includes
    pages the allocators keep cached after a free.
    """
    arrow_base = pa.total_allocated_bytes()
    arrow_peak = 0
    rows = 0
    tracemalloc.start()
    try:
        start, _ = tracemalloc.get_traced_memory()
        for batch in iter_batches(path, label_column="y", batch_size=batch_size):
            rows += len(batch)
            arrow_peak = max(arrow_peak, pa.total_allocated_bytes() - arrow_base)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return rows, peak - start + arrow_peak


@pytest.mark.slow
def test_streaming_memory_is_bounded_by_the_batch(tmp_path: Path) -> None:
    rows, block, batch_size = 2_000_000, 100_000, 100_000
    parquet, csv = _big_files(tmp_path, rows, block)
    in_memory = rows * 11 * 8  # the whole table as float64: 176 MB
    for path in (parquet, csv):
        count, growth = _peak_growth(path, batch_size)
        assert count == rows
        # One batch is 8.8 MB; the reader holds a few of them at once, never the file.
        assert growth < in_memory / 3, (path.suffix, growth / 2**20)


# --------------------------------------------------------------------------- labels


def test_label_map_int_classes() -> None:
    labels = label_map_for([0, 1, 2], 3)
    raw = np.array([2, 0, 1, 1])
    assert labels.encode(raw).tolist() == [2, 0, 1, 1]
    assert labels.encode(np.array([2.0, 0.0])).tolist() == [2, 0]
    assert labels.encode(np.array(["1", "1.0", " 2 "], dtype=object)).tolist() == [1, 1, 2]
    assert labels.encode(np.array([True, False])).tolist() == [1, 0]
    assert labels.encode(np.array([2, 0])).dtype == np.int64


def test_label_map_follows_the_model_order() -> None:
    labels = label_map_for([3, 1], 2)
    assert labels.encode(np.array([1, 3, 3])).tolist() == [1, 0, 0]


def test_label_map_string_classes() -> None:
    labels = label_map_for(np.array(["a", "b", "c", "d"]), 4)
    assert labels.classes == ("a", "b", "c", "d")
    raw = np.array(["d", "a", "c", "b", "a"], dtype=object)
    assert labels.encode(raw).tolist() == [3, 0, 2, 1, 0]
    assert labels.encode(np.array(["b", "c"])).tolist() == [1, 2]


def test_label_map_numeric_text_classes_match_numbers() -> None:
    labels = label_map_for(["0", "1", "x"], 3)
    assert labels.encode(np.array([1.0, 0.0])).tolist() == [1, 0]


def test_label_map_unknown_labels_are_named() -> None:
    labels = label_map_for(["a", "b"], 2)
    raw = np.array(["a", "z", "q", "z", "b"], dtype=object)
    with pytest.raises(
        InvalidInputError,
        match=r"must be classes of the model \('a', 'b'\). Found 2 unknown label value\(s\): "
        r"'z', 'q'\.",
    ):
        labels.encode(raw)
    with pytest.raises(InvalidInputError, match=r"Found 1 unknown.*: 1\.5"):
        label_map_for(None, 2).encode(np.array([0.0, 1.5]))


def test_label_map_refuses_missing_labels() -> None:
    with pytest.raises(InvalidInputError, match="must not be missing. Found nan at index 1"):
        label_map_for(None, 2).encode(np.array([0.0, np.nan]))


def test_label_map_without_classes() -> None:
    assert label_map_for(None, 1).classes == (0, 1)
    assert label_map_for(None, 5).classes == (0, 1, 2, 3, 4)
    assert label_map_for(None, 1).encode(np.array([1.0, 0.0])).tolist() == [1, 0]
    assert label_map_for([False, True], 1).encode(np.array(["True", "false"])).tolist() == [1, 0]


def test_label_map_checks_its_arguments() -> None:
    with pytest.raises(InvalidInputError, match="n_outputs"):
        label_map_for(None, 0)
    with pytest.raises(InvalidInputError, match="must number 3"):
        label_map_for([0, 1], 3)
    with pytest.raises(InvalidInputError, match="distinct"):
        LabelMap((1, 1.0))
    with pytest.raises(InvalidInputError, match="distinct"):
        LabelMap(("a", " a"))


def test_reader_and_label_map_together(tmp_path: Path) -> None:
    frame = _table()
    path, _ = _write(frame, tmp_path, "csv")
    labels = label_map_for(np.array([0, 1, 2]), 3)
    codes = np.concatenate(
        [labels.encode(b.labels) for b in iter_batches(path, label_column="y", batch_size=4)]
    )
    assert codes.tolist() == frame["y"].tolist()


# --------------------------------------------------------------------------- whole tables


@pytest.mark.parametrize("kind", KINDS)
def test_read_table_is_every_batch_with_the_feature_names(tmp_path: Path, kind: str) -> None:
    frame = _table()
    path, label = _write(frame, tmp_path, kind)
    table = read_table(path, label_column=label)
    batches = list(iter_batches(path, label_column=label, batch_size=5))
    features, labels = _collect(batches)
    np.testing.assert_array_equal(table.features, features)
    np.testing.assert_array_equal(table.labels, labels)
    assert table.feature_names == (("0", "1", "2") if kind == "npy" else tuple(FEATURES))
    selected = read_table(path, label_column=label, features=list(table.feature_names[::-1]))
    np.testing.assert_array_equal(selected.features, features[:, ::-1])


# --------------------------------------------------------------------------- one column

VALUES = np.array([0.25, -1.5, 3.0, 1e-300, 7.0])


def _write_column(directory: Path, kind: str) -> Path:
    if kind == "npy":
        np.save(directory / "v.npy", VALUES)
        return directory / "v.npy"
    if kind == "npy-column":
        np.save(directory / "c.npy", VALUES[:, None])
        return directory / "c.npy"
    if kind == "csv":
        pd.DataFrame({"loss": VALUES}).to_csv(
            directory / "v.csv", index=False, float_format="%.17g"
        )
        return directory / "v.csv"
    if kind == "csv-headerless":
        (directory / "h.csv").write_text("".join(f"{v!r}\n" for v in VALUES.tolist()))
        return directory / "h.csv"
    if kind == "parquet":
        pq.write_table(pa.table({"loss": VALUES}), directory / "v.pq")
        return directory / "v.pq"
    assert kind == "npz"
    np.savez(directory / "v.npz", loss=VALUES)
    return directory / "v.npz"


@pytest.mark.parametrize("kind", ["npy", "npy-column", "csv", "csv-headerless", "parquet", "npz"])
def test_read_column_in_every_format(tmp_path: Path, kind: str) -> None:
    values = read_column(_write_column(tmp_path, kind))
    assert values.dtype == np.float64
    np.testing.assert_array_equal(values, VALUES)


@pytest.mark.parametrize(
    ("name", "content", "error", "message"),
    [
        (
            "two.csv",
            "a,b\n1,2\n",
            InputFileError,
            "must have exactly one column. Found 2: 'a', 'b'",
        ),
        (
            "text.csv",
            "loss\n1\nabc\n",
            InvalidInputError,
            "column 'loss' must be numeric. Found 'abc' at row 1",
        ),
        (
            "nan.csv",
            "1.0\n2.0\nnan\n",
            InvalidInputError,
            "column '0' must be finite. Found nan at row 2",
        ),
        (  # the blank line is skipped; the empty field is a missing value
            "gap.csv",
            'loss\n1.0\n\n2.0\n""\n',
            InvalidInputError,
            "column 'loss' must be finite. Found nan at row 2",
        ),
        (  # a row of two fields in a file of one column
            "ragged.csv",
            "loss\n1.0\n\n2.0\n,\n",
            InputFileError,
            r"as many fields as the header \(1\).*Found 2 fields on line 5\.$",
        ),
        ("header.csv", "loss\n", InsufficientDataError, "must hold at least one row. Found none"),
        ("empty.csv", "", InsufficientDataError, "Found an empty file"),
    ],
)
def test_read_column_errors(
    tmp_path: Path, name: str, content: str, error: type[Exception], message: str
) -> None:
    (tmp_path / name).write_text(content)
    with pytest.raises(error, match=rf"^{tmp_path / name}: .*{message}"):
        read_column(tmp_path / name)


def test_read_column_errors_of_arrays_and_paths(tmp_path: Path) -> None:
    np.save(tmp_path / "m.npy", np.ones((4, 2)))
    with pytest.raises(InputFileError, match=r"1-D array or one column. Found shape \(4, 2\)\.$"):
        read_column(tmp_path / "m.npy")
    np.savez(tmp_path / "two.npz", a=np.ones(3), b=np.ones(3))
    with pytest.raises(InputFileError, match="exactly one column. Found 2: 'a', 'b'"):
        read_column(tmp_path / "two.npz")
    np.save(tmp_path / "inf.npy", np.array([1.0, np.inf]))
    with pytest.raises(
        InvalidInputError, match=r"column '0' must be finite. Found inf at row 1\.$"
    ):
        read_column(tmp_path / "inf.npy")
    np.save(tmp_path / "none.npy", np.empty(0))
    with pytest.raises(InsufficientDataError, match="at least one row"):
        read_column(tmp_path / "none.npy")
    with pytest.raises(InputFileError, match=r"^--losses must exist and be a file\. Found '"):
        read_column(tmp_path / "missing.npy", name="--losses")
    with pytest.raises(InputFileError, match=r"^--losses must end in one of .* Found '"):
        read_column(tmp_path / "losses.txt", name="--losses")


def test_labels_outside_the_models_classes_name_the_file_and_the_column() -> None:
    """adult.test writes '>50K.' where adult.data writes '>50K'."""
    from epsstar.audit.data.tables import label_map_for

    label_map = label_map_for(("<=50K", ">50K"), 2)
    with pytest.raises(InvalidInputError) as caught:
        label_map.encode(
            np.array(["<=50K.", ">50K."], dtype=object), source="adult.test: label column 'income'"
        )
    message = str(caught.value)
    assert message.startswith("adult.test: label column 'income': labels must be classes")
    assert "'>50K.'" in message


def test_a_pandas_index_in_parquet_is_not_a_column(tmp_path: Path) -> None:
    frame = pd.DataFrame({"x": np.arange(10.0), "y": np.arange(10) % 2})
    frame = frame.sample(frac=1.0, random_state=0)  # an index that is no range
    frame.to_parquet(tmp_path / "shuffled.parquet")  # writes __index_level_0__
    named = frame.set_index(pd.Index([3, 1, 4, 15, 9, 2, 6, 5, 35, 8], name="row"))
    named.to_parquet(tmp_path / "named.parquet")
    for file in ("shuffled.parquet", "named.parquet"):
        assert len(pq.read_schema(tmp_path / file).names) == 3  # the index is stored
        assert read_schema(tmp_path / file).columns == ("x", "y")
        (batch,) = iter_batches(tmp_path / file, label_column="y")
        assert batch.features.names == ("x",)
        assert batch.labels.tolist() == frame["y"].tolist()
