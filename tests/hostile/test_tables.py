"""Hostile data files and manifests: each is refused with exit 2 and one line, never read wrong.

Every case builds its files from scratch in ``tmp_path`` and runs the command in process;
the message must name the problem and end with the bad value, and no output is left.
"""

from __future__ import annotations

import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from epsstar.audit.data.tables import read_column, read_schema, read_table
from epsstar.audit.many import read_manifest
from epsstar.cli import main

COLUMNS = [f"x{i}" for i in range(6)]
Write = Callable[[Path], tuple[str, str]]  # writes the bad file; (its name, label column)


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A logistic-regression ONNX model (float32 input) and clean data in every format."""
    from skl2onnx import to_onnx
    from sklearn.linear_model import LogisticRegression

    folder = tmp_path_factory.mktemp("good")
    rng = np.random.default_rng(0)
    features = rng.normal(size=(400, 6))
    labels = (features @ rng.normal(size=6) > 0).astype(np.int64)
    model = LogisticRegression().fit(features[:200], labels[:200])
    # opset 17: skl2onnx 1.20 with onnx 1.17 would write 22, which onnxruntime 1.18 refuses
    onnx = to_onnx(
        model, features[:1].astype(np.float32), options={"zipmap": False}, target_opset=17
    )
    (folder / "model.onnx").write_bytes(onnx.SerializeToString())
    frame = pd.DataFrame(features, columns=COLUMNS).assign(label=labels)
    frame.iloc[:200].to_csv(folder / "train.csv", index=False)
    frame.iloc[200:].to_csv(folder / "population.csv", index=False)
    np.save(folder / "population.npy", frame.iloc[200:].to_numpy())
    return folder


def frame(rows: int = 200) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    values = rng.normal(size=(rows, 6))
    return pd.DataFrame(values, columns=COLUMNS).assign(label=rng.integers(0, 2, rows))


def csv_text(rows: int = 200) -> str:
    return str(frame(rows).to_csv(index=False))


def write_text(name: str, text: str, label: str = "label") -> Write:
    def write(folder: Path) -> tuple[str, str]:
        (folder / name).write_text(text, encoding="utf-8")
        return name, label

    return write


def write_bytes(name: str, data: bytes, label: str = "label") -> Write:
    def write(folder: Path) -> tuple[str, str]:
        (folder / name).write_bytes(data)
        return name, label

    return write


def with_line(number: int, line: str) -> str:
    """The clean CSV with line ``number`` (1-based, the header is line 1) replaced."""
    lines = csv_text().splitlines()
    lines[number - 1] = line
    return "\n".join(lines) + "\n"


def parquet(name: str, table: Callable[[], pa.Table]) -> Write:
    def write(folder: Path) -> tuple[str, str]:
        pq.write_table(table(), folder / name)
        return name, "label"

    return write


def duplicate_parquet() -> pa.Table:
    data = frame()
    arrays = [pa.array(data[c]) for c in [*COLUMNS, "label"]] + [pa.array(np.full(200, 7))]
    return pa.table(arrays, names=[*COLUMNS, "label", "label"])


def struct_parquet() -> pa.Table:
    data = frame()
    table = pa.Table.from_pandas(data, preserve_index=False)
    nested = pa.array([{"p": float(v)} for v in data["x0"]])
    return table.set_column(0, "x0", nested)


def text_parquet() -> pa.Table:
    table = pa.Table.from_pandas(frame(), preserve_index=False)
    return table.set_column(2, "x2", pa.array(["a"] * 200))


def empty_parquet() -> pa.Table:
    return pa.Table.from_pandas(frame().iloc[:0], preserve_index=False)


def huge_parquet() -> pa.Table:
    data = frame()
    data.loc[17, "x3"] = -1e39
    return pa.Table.from_pandas(data, preserve_index=False)


def npy_header(shape: str) -> Write:
    """A .npy file of 3x7 float64 whose header announces ``shape`` instead."""

    def write(folder: Path) -> tuple[str, str]:
        path = folder / "lying.npy"
        np.save(path, np.zeros((3, 7)))
        raw = path.read_bytes()
        end = raw.index(b"\n") + 1
        header = raw[10:end].decode("latin1").replace("(3, 7)", shape).rstrip()
        path.write_bytes(raw[:10] + (header.ljust(end - 11) + "\n").encode("latin1") + raw[end:])
        return path.name, "6"

    return write


def damaged_npz(at: int) -> Write:
    """An .npz whose compressed 'X' has 200 bytes flipped ``at`` bytes into its data."""

    def write(folder: Path) -> tuple[str, str]:
        return _damage(folder, at), "label"

    return write


def _damage(folder: Path, at: int) -> str:
    path = folder / "damaged.npz"
    data = frame(5000)
    np.savez_compressed(path, X=data[COLUMNS].to_numpy(), label=data["label"].to_numpy())
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        member = archive.getinfo("X.npy")
    start = member.header_offset + 30 + len(member.filename) + len(member.extra)
    for offset in range(start + at, start + at + 200):
        raw[offset] ^= 0x5A
    path.write_bytes(bytes(raw))
    return path.name


def twice_in_npz(folder: Path) -> tuple[str, str]:
    path = folder / "twice.npz"
    data = frame()
    with zipfile.ZipFile(path, "w") as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the duplicate name is the point
        for name, values in [("x0", data["x0"]), ("label", data["label"]), ("x0", data["x1"])]:
            with archive.open(f"{name}.npy", "w") as stream:
                np.lib.format.write_array(stream, values.to_numpy())
    return path.name, "label"


def directory(folder: Path) -> tuple[str, str]:
    (folder / "data.csv").mkdir()
    return "data.csv", "label"


def nan_label() -> str:
    data = frame().astype({"label": float})
    data.loc[3, "label"] = np.nan
    return str(data.to_csv(index=False))


def mixed_labels() -> str:
    data = frame().astype({"label": object})
    data.loc[11, "label"] = "cat"
    return str(data.to_csv(index=False))


def npz_bytes() -> bytes:
    import io

    buffer = io.BytesIO()
    np.savez(buffer, a=np.zeros(3))
    return buffer.getvalue()


LONG = "9e" * 1_500_000
# (id, the bad training file, the telling part of the message, how the message ends)
AUDITS: list[tuple[str, Write, str, str]] = [
    (
        "decimal comma shifts a row",
        write_text("comma.csv", with_line(5, "0.1,0.2,1,5,0.3,0.4,0.5,1")),
        "comma.csv: every row must have as many fields as the header (7)",
        "Found 8 fields on line 5.",
    ),
    (
        "short row",
        write_text("short.csv", with_line(9, "0.1,0.2,0.3")),
        "as many fields as the header (7)",
        "Found 3 fields on line 9.",
    ),
    (
        "duplicate csv column",
        write_text("twice.csv", csv_text().replace("x5,label", "x4,label", 1)),
        "twice.csv: column names must be unique.",
        "Found 'x4' more than once.",
    ),
    (
        "duplicate parquet column",
        parquet("twice.parquet", duplicate_parquet),
        "twice.parquet: column names must be unique.",
        "Found 'label' more than once.",
    ),
    (
        "npy header announces 2e9 columns",
        npy_header("(3, 2000000000)"),
        "lying.npy: must hold the 48000000000 bytes its header announces",
        "Found 168.",
    ),
    (
        "npy header announces a negative size",
        npy_header("(3, -7)"),
        "lying.npy: must have a shape of sizes ≥ 0.",
        "Found (3, -7).",
    ),
    (
        "npy of zero rows and a billion columns",
        npy_header("(0, 1000000000)"),
        "lying.npy: must have at most 1000000 columns.",
        "Found shape (0, 1000000000).",
    ),
    (
        "npz with a damaged deflate stream at its start",
        damaged_npz(50),
        "damaged.npz: must be a readable .npz file. Found a damaged archive",
        ".",
    ),
    (
        "npz with a damaged deflate stream deep inside",
        damaged_npz(150_000),
        "damaged.npz: must be a readable .npz file. Found a damaged archive",
        ".",
    ),
    ("empty npz", write_bytes("empty.npz", b""), "empty.npz: must be a readable .npz file", "."),
    (
        "npz naming an array twice",
        twice_in_npz,
        "twice.npz: column names must be unique.",
        "Found 'x0.npy' more than once.",
    ),
    (
        "directory",
        directory,
        "train: must be a file, not a directory.",
        "data.csv'.",
    ),
    (
        "value beyond float32",
        write_text("big.csv", with_line(4, "0.1,0.2,1e39,0.3,0.4,0.5,1")),
        "big.csv: feature column 'x2' must fit the model's input type float32",
        "Found 1e+39 at row 2.",
    ),
    (
        "negative value beyond float32 in parquet",
        parquet("big.parquet", huge_parquet),
        "feature column 'x3' must fit the model's input type float32",
        "Found -1e+39 at row 17.",
    ),
    (
        "latin-1 csv",
        write_bytes("latin.csv", csv_text().replace("0.", "\xe9.", 1).encode("latin1")),
        "latin.csv: must be UTF-8 text.",
        "Found the byte 0xe9, which is not.",
    ),
    (
        "utf-16 csv",
        write_bytes("wide.csv", csv_text().encode("utf-16")),
        "wide.csv: must be UTF-8 text.",
        "Found UTF-16 (its byte-order mark).",
    ),
    (
        "header only",
        write_text("header.csv", ",".join([*COLUMNS, "label"]) + "\n"),
        "header.csv: must hold at least one row.",
        "Found none.",
    ),
    (
        "missing label",
        write_text("nolabel.csv", nan_label()),
        "label column 'label' must have a value in every row.",
        "Found nan at row 3.",
    ),
    (
        "infinite feature",
        write_text("inf.csv", with_line(8, "0.1,inf,0.2,0.3,0.4,0.5,0")),
        "feature column 'x1' must be finite.",
        "Found inf at row 6.",
    ),
    (
        "label of another type",
        write_text("mixed.csv", mixed_labels()),
        "unknown label value(s): 'cat'",
        "'cat'.",
    ),
    (
        "empty parquet",
        parquet("empty.parquet", empty_parquet),
        "empty.parquet: must hold at least one row.",
        "Found none.",
    ),
    (
        "struct feature in parquet",
        parquet("struct.parquet", struct_parquet),
        "feature column 'x0' must hold numbers, booleans or text.",
        "at row 0.",
    ),
    (
        "text feature in parquet",
        parquet("text.parquet", text_parquet),
        "feature column 'x2' must be numeric.",
        "Found 'a' at row 0.",
    ),
    (
        "npz named csv",
        write_bytes("archive.csv", npz_bytes()),
        "archive.csv: must be a CSV text file.",
        "Found a ZIP archive (such as .npz).",
    ),
    (
        "csv named parquet",
        write_text("text.parquet", csv_text()),
        "text.parquet: must be a readable Parquet file.",
        ".",
    ),
    (
        "csv named npy",
        write_text("text.npy", csv_text(), label="6"),
        "text.npy: must be a readable .npy array.",
        ".",
    ),
    (
        "a line longer than the fast parser's block, then a ragged row",
        write_text("huge.csv", f"x0,label\n{'x' * 17_000_000},1\n0.5,1,2\n"),
        "huge.csv: must be a readable CSV file.",
        "Found: field larger than field limit (131072).",
    ),
    (
        "a field of three million digits",
        write_text("long.csv", with_line(3, f"{LONG},0.2,0.3,0.4,0.5,0.6,1")),
        "feature column 'x0' must be numeric. Found '9e9e9e",
        "(3000002 chars) at row 1.",
    ),
]


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(args)
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    return code, capsys.readouterr().err


def assert_refused(code: int, err: str, command: str, telling: str, ending: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.strip().splitlines() if not line.startswith("epsstar: warning")]
    assert len(lines) == 1, err
    assert lines[0].startswith(f"epsstar {command}: error: "), lines[0]
    assert telling in lines[0]
    assert lines[0].endswith(ending), lines[0]
    assert len(lines[0]) < 400


@pytest.mark.parametrize(
    ("write", "telling", "ending"),
    [case[1:] for case in AUDITS],
    ids=[case[0] for case in AUDITS],
)
def test_audit_refuses_hostile_data(
    write: Write,
    telling: str,
    ending: str,
    good: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name, label = write(tmp_path)
    population = good / ("population.npy" if label == "6" else "population.csv")
    out = tmp_path / "out.json"
    args = ["audit", str(good / "model.onnx"), "--train", str(tmp_path / name)]
    args += ["--population", str(population), "--label-column", label, "--quiet"]
    code, err = run([*args, "--json", str(out)], capsys)
    assert_refused(code, err, "audit", telling, ending)
    assert not out.exists()


def manifest_row(good: Path) -> str:
    return f"{good / 'model.onnx'},{good / 'train.csv'},{good / 'population.csv'},label,a,0"


MANIFEST_HEADER = "model,train,population,label_column,strategy,repeat"
MANIFESTS: list[tuple[str, Callable[[Path, Path], Path], str, str]] = [
    (
        "latin-1 csv manifest",
        lambda folder, good: _write(
            folder / "m.csv", f"{MANIFEST_HEADER}\n{manifest_row(good)},\n".replace(",a,", ",\xe9,")
        ),
        "m.csv: a manifest must be UTF-8 text.",
        "which is not.",
    ),
    (
        "latin-1 toml manifest",
        lambda folder, good: _write(folder / "m.toml", '[[models]]\nmodel = "\xe9.onnx"\n'),
        "m.toml: a manifest must be UTF-8 text.",
        "Found the byte 0xe9 at offset 20, which is not.",
    ),
    (
        "ragged manifest row",
        lambda folder, good: _write(
            folder / "m.csv", f"{MANIFEST_HEADER}\n{manifest_row(good)}\n{manifest_row(good)},x\n"
        ),
        "every manifest row must have as many fields as the header (6).",
        "Found 7 fields on row 3.",
    ),
    (
        "manifest naming a column twice",
        lambda folder, good: _write(
            folder / "m.csv", f"{MANIFEST_HEADER},model\n{manifest_row(good)},{good}/x.onnx\n"
        ),
        "manifest columns must be named once.",
        "Found 'model' more than once.",
    ),
    (
        "directory manifest",
        lambda folder, good: _mkdir(folder / "m.csv"),
        "manifest: must be a file, not a directory.",
        "m.csv'.",
    ),
    (
        "toml models that are not tables",
        lambda folder, good: _write(folder / "m.toml", 'models = ["a.onnx"]\n'),
        "models[0] must be a table.",
        "Found 'a.onnx'.",
    ),
]


def _write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("latin1"))
    return path


def _mkdir(path: Path) -> Path:
    path.mkdir()
    return path


@pytest.mark.parametrize(
    ("write", "telling", "ending"),
    [case[1:] for case in MANIFESTS],
    ids=[case[0] for case in MANIFESTS],
)
def test_audit_many_refuses_hostile_manifests(
    write: Callable[[Path, Path], Path],
    telling: str,
    ending: str,
    good: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    manifest = write(tmp_path, good)
    out = tmp_path / "out.json"
    code, err = run(["audit-many", str(manifest), "--quiet", "--json", str(out)], capsys)
    assert_refused(code, err, "audit-many", telling, ending)
    assert not out.exists()


LOSSES: list[tuple[str, Write, str, str]] = [
    (
        "decimal comma in a loss file",
        write_text("losses.csv", "loss\n0.5\n1,5\n0.25\n"),
        "losses.csv: every row must have as many fields as the header (1)",
        "Found 2 fields on line 3.",
    ),
    (
        "loss file that is a directory",
        lambda folder: (_mkdir(folder / "losses.npy").name, ""),
        "--train-losses must be a file, not a directory.",
        "losses.npy'.",
    ),
    (
        "loss npy announcing more than it holds",
        npy_header("(3000000,)"),
        "must hold the 24000000 bytes its header announces",
        "Found 168.",
    ),
]


@pytest.mark.parametrize(
    ("write", "telling", "ending"),
    [case[1:] for case in LOSSES],
    ids=[case[0] for case in LOSSES],
)
def test_epsilon_refuses_hostile_loss_files(
    write: Write, telling: str, ending: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name, _ = write(tmp_path)
    population = tmp_path / "population.npy"
    np.save(population, np.random.default_rng(0).exponential(size=500))
    out = tmp_path / "out.json"
    args = ["epsilon", "--train-losses", str(tmp_path / name)]
    code, err = run([*args, "--population-losses", str(population), "--json", str(out)], capsys)
    assert_refused(code, err, "epsilon", telling, ending)
    assert not out.exists()


def test_train_refuses_a_ragged_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data.csv"
    data.write_text(with_line(6, "0.1,0.2,0,5,0.3,0.4,0.5,1"))
    out = tmp_path / "model"
    args = ["train", "--data", str(data), "--label-column", "label", "--epochs", "1"]
    code, err = run([*args, "--out", str(out), "--quiet"], capsys)
    assert_refused(code, err, "train", "data.csv: every row must", "Found 8 fields on line 6.")
    assert not out.exists()


def test_a_byte_order_mark_is_not_part_of_the_first_column_name(tmp_path: Path) -> None:
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf" + csv_text().encode())
    assert read_schema(path).columns == (*COLUMNS, "label")
    assert read_table(path, label_column="label").features.shape == (200, 6)


def test_a_byte_order_mark_in_a_manifest_is_dropped(good: Path, tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_bytes(b"\xef\xbb\xbf" + f"{MANIFEST_HEADER}\n{manifest_row(good)}\n".encode())
    (entry,) = read_manifest(path)
    assert entry.model == good / "model.onnx"


def test_quoted_decimal_commas_and_blank_lines_are_read(tmp_path: Path) -> None:
    path = tmp_path / "quoted.csv"
    path.write_text('a,label\n1,"x,y"\n\n2,"z\nw"\n')
    table = read_table(path, label_column="label")
    assert table.labels.tolist() == ["x,y", "z\nw"]
    column = tmp_path / "column.csv"
    column.write_text("0.5\n\n0.25\n")
    assert read_column(column).tolist() == [0.5, 0.25]


def test_train_refuses_a_value_beyond_float32(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data.csv"
    data.write_text(with_line(6, "0.1,0.2,0.3,1e39,0.4,0.5,1"))
    out = tmp_path / "model"
    args = ["train", "--data", str(data), "--label-column", "label", "--epochs", "1"]
    code, err = run([*args, "--out", str(out), "--quiet"], capsys)
    telling = "feature column 'x3' must fit the model's input type float32"
    assert_refused(code, err, "train", telling, "Found 1e+39 at row 4.")
    assert not out.exists()


@pytest.mark.parametrize(
    ("input_dtype", "value", "ending"),
    [
        (np.float32, -1e39, "row 1, column 2. Found -1e+39."),
        (np.int32, 2.0**31, "row 1, column 2. Found 2147483648.0."),
        (np.uint8, -1.0, "row 1, column 2. Found -1.0."),
    ],
    ids=["float32", "int32", "uint8"],
)
def test_a_loader_refuses_values_its_input_type_cannot_hold(
    input_dtype: type[np.generic], value: float, ending: str
) -> None:
    from epsstar.exceptions import InvalidInputError
    from loaders import BatchedModel

    class Echo(BatchedModel):
        def _run_batch(self, batch: np.ndarray) -> np.ndarray:
            return np.full(batch.shape[0], 0.5)

    model = Echo(
        Path("echo.onnx"),
        n_features=3,
        classes=None,
        outputs="probabilities",
        input_dtype=input_dtype,
    )
    assert model.input_dtype == np.dtype(input_dtype)
    features = np.zeros((3, 3))
    features[1, 2] = value
    with pytest.raises(InvalidInputError, match=f"must fit {np.dtype(input_dtype)}") as error:
        model.predict(features)
    assert str(error.value).endswith(ending)
    assert model.predict(np.ones((2, 3))).shape == (2,)
