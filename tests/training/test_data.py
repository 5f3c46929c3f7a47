"""Reading feature tables."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from epsstar.exceptions import InputFileError, InsufficientDataError, InvalidInputError
from epsstar.training.data.tables import load_table
from epsstar.training.runs.pipeline import load_inputs


def test_csv_and_parquet_share_the_encoding(csv_files: tuple[Path, Path]) -> None:
    train, population = load_inputs(csv_files[0], "label", csv_files[1])
    assert population is not None
    assert train.classes == population.classes == ("no", "yes")
    assert train.feature_names == ("f0", "f1", "f2", "f3")
    assert train.features.shape == (1000, 4)
    assert population.n_records == 500
    assert set(np.unique(train.labels)) == {0, 1}


def test_npz_layouts(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(30, 3)), rng.integers(0, 3, size=30)
    np.savez(tmp_path / "matrix.npz", X=x, y=y)
    np.savez(tmp_path / "columns.npz", a=x[:, 0], b=x[:, 1], target=y)
    matrix = load_table(tmp_path / "matrix.npz", "y")
    assert matrix.feature_names == ("x0", "x1", "x2")
    np.testing.assert_array_equal(matrix.features, x)
    columns = load_table(tmp_path / "columns.npz", "target", features=["b", "a"])
    np.testing.assert_array_equal(columns.features, x[:, [1, 0]])
    assert columns.classes == ("0", "1", "2")


def test_labels_sorted_numerically_and_float_integers_merged(tmp_path: Path) -> None:
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "y": [10.0, 9.0, 2.0, 10.0]})
    frame.to_csv(tmp_path / "t.csv", index=False)
    table = load_table(tmp_path / "t.csv", "y")
    assert table.classes == ("2", "9", "10")
    assert table.labels.tolist() == [2, 1, 0, 2]


@pytest.mark.parametrize(
    ("content", "label", "error", "message"),
    [
        (
            "x,y\n1,0\n2,1\n",
            "z",
            InputFileError,
            r"label column 'z' must be one of its columns. Found columns 'x', 'y'\.",
        ),
        ("x,s,y\n1,a,0\n2,b,1\n", "y", InvalidInputError, "feature column 's' must be numeric"),
        ("x,y\n1,0\n,1\n", "y", InvalidInputError, "feature column 'x' must be finite"),
        (
            "x,y\n1,0\n2,\n",
            "y",
            InvalidInputError,
            r"label column 'y' must have a value in every row. Found nan at row 1\.",
        ),
        ("x,y\n", "y", InsufficientDataError, "bad.csv: must hold at least one row. Found none."),
    ],
)
def test_bad_tables(
    tmp_path: Path, content: str, label: str, error: type[Exception], message: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(error, match=message):
        load_table(path, label)


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match="data file must exist and be a file"):
        load_table(tmp_path / "missing.csv", "y")
    with pytest.raises(InputFileError, match="must end in one of"):
        load_table(tmp_path / "data.txt", "y")
    (tmp_path / "broken.parquet").write_text("not parquet")
    with pytest.raises(InputFileError, match="broken.parquet: must be a readable Parquet file"):
        load_table(tmp_path / "broken.parquet", "y")


def test_unseen_population_label(tmp_path: Path) -> None:
    pd.DataFrame({"x": [1, 2], "y": ["a", "b"]}).to_csv(tmp_path / "t.csv", index=False)
    pd.DataFrame({"x": [1, 2], "y": ["a", "c"]}).to_csv(tmp_path / "p.csv", index=False)
    with pytest.raises(InvalidInputError, match="label 'c' at row 1 does not occur"):
        load_inputs(tmp_path / "t.csv", "y", tmp_path / "p.csv")
