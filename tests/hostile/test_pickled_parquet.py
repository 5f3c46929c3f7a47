"""A Parquet file whose column type is a pickled Python object runs no code when read.

pyarrow 0.14.0 to 14.0.0 unpickled the type of a column marked
``arrow.py_extension_type`` whenever a Parquet, Feather or IPC file was opened
(CVE-2023-47248), so a losses or data file from someone else could run any code on the
auditor's machine. ``pyproject.toml`` asks for pyarrow 14.0.1 or later, which refuses to
unpickle it. The pickle here touches a file: with pyarrow 14.0.0 the file appears (and the
read ends in a traceback), so these tests fail there.
"""

from __future__ import annotations

import pathlib
import pickle
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from epsstar.cli import main

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "models"


class _Touch:
    """Unpickles by creating ``marker``: a harmless stand-in for any code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[Path]]:
        return (pathlib.Path.touch, (self.marker,))


def _pickled_type(table: pa.Table, column: str, marker: Path) -> pa.Table:
    """``table`` with ``column`` marked as pyarrow's pickled Python extension type."""
    metadata = {
        b"ARROW:extension:name": b"arrow.py_extension_type",
        b"ARROW:extension:metadata": pickle.dumps(_Touch(marker)),
    }
    index = table.schema.get_field_index(column)
    schema = table.schema.set(index, table.schema.field(index).with_metadata(metadata))
    return pa.Table.from_arrays(table.columns, schema=schema)


def _ran_nothing(code: int, marker: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert not marker.exists()  # the pickle never ran
    assert code in (0, 2)
    assert "Traceback" not in capsys.readouterr().err


def test_a_losses_file_runs_no_pickled_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "ran"
    losses = pa.table({"loss": [0.1 * (i % 7) for i in range(150)]})
    pq.write_table(_pickled_type(losses, "loss", marker), tmp_path / "train.parquet")
    pq.write_table(losses, tmp_path / "population.parquet")
    argv = ["epsilon", "--train", str(tmp_path / "train.parquet")]
    code = main([*argv, "--population", str(tmp_path / "population.parquet")])
    _ran_nothing(code, marker, capsys)


def test_a_table_audited_through_a_model_runs_no_pickled_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "ran"
    for role in ("train", "population"):
        frame = pd.read_csv(FIXTURES / f"binary_{role}.csv")
        table = pa.Table.from_pandas(frame, preserve_index=False)
        pq.write_table(_pickled_type(table, "x0", marker), tmp_path / f"{role}.parquet")
    argv = ["audit", str(FIXTURES / "binary_logreg.onnx"), "--label-column", "label"]
    argv += ["--train", str(tmp_path / "train.parquet")]
    code = main([*argv, "--population", str(tmp_path / "population.parquet"), "--quiet"])
    _ran_nothing(code, marker, capsys)
