"""A slice column's real values stay apart from missing ones, and nested values are refused.

A text value ``"(missing)"`` is a value, not the absence of one: it is a slice of its own,
and the records without a value are another, whose JSON ``value`` is ``null``. Parquet list
and struct columns as ``--slice-by`` or ``--label-column`` are one line and exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from epsstar.audit.attacks.slices import MISSING, read_slice_keys
from epsstar.cli import main

MODEL = Path(__file__).resolve().parents[2] / "fixtures" / "models" / "binary_logreg.onnx"
FEATURES = "--features=" + ",".join(f"x{j}" for j in range(8))


def _table(path: Path, n: int, seed: int, extra: dict[str, object]) -> Path:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n, 8)), columns=[f"x{j}" for j in range(8)])
    frame["label"] = np.arange(n) % 2
    for name, values in extra.items():
        frame[name] = values
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)
    return path


def test_a_text_value_spelled_missing_is_not_merged_with_missing_values(tmp_path: Path) -> None:
    groups = ["(missing)", None, "a"] * 4
    train = _table(tmp_path / "train.csv", 12, 1, {"g": groups})
    population = _table(tmp_path / "population.parquet", 12, 2, {"g": groups})
    keys = read_slice_keys(train, population, "g")
    assert keys.values == ("(missing)", "a", None)
    assert keys.train.tolist() == [0, 2, 1] * 4
    assert keys.population.tolist() == [0, 2, 1] * 4


def test_the_json_tells_the_missing_slice_from_the_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    groups = ["(missing)", None] * 150
    train = _table(tmp_path / "train.csv", 300, 1, {"g": groups})
    population = _table(tmp_path / "population.csv", 300, 2, {"g": groups})
    code = main(
        [
            "audit",
            str(MODEL),
            "--train",
            str(train),
            "--population",
            str(population),
            "--label-column",
            "label",
            FEATURES,
            "--slice-by",
            "g",
            "--method",
            "empirical",
            "--quiet",
            "--json",
            str(tmp_path / "audit.json"),
        ]
    )
    assert code == 0, capsys.readouterr().err
    rows = json.loads((tmp_path / "audit.json").read_text(encoding="utf-8"))["slices"]["slices"]
    assert [(row["value"], row["n_members"]) for row in rows] == [("(missing)", 150), (None, 150)]
    assert capsys.readouterr().err == ""
    code = main(
        [
            "audit",
            str(MODEL),
            "--train",
            str(train),
            "--population",
            str(population),
            "--label-column",
            "label",
            FEATURES,
            "--slice-by",
            "g",
            "--method",
            "empirical",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert f"\n    {MISSING}  " in out
    assert '\n    "(missing)"  ' in out


@pytest.mark.parametrize("option", ["--slice-by", "--label-column"])
@pytest.mark.parametrize("values", [[[0]] * 20, [{"a": 0}] * 20], ids=["list", "struct"])
def test_nested_parquet_columns_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, values: list[object]
) -> None:
    train = _table(tmp_path / "train.parquet", 20, 1, {"nested": values})
    population = _table(tmp_path / "population.parquet", 20, 2, {"nested": values})
    label = "nested" if option == "--label-column" else "label"
    args = ["audit", str(MODEL), "--train", str(train), "--population", str(population)]
    args += ["--label-column", label, FEATURES, "--quiet"]
    if option == "--slice-by":
        args += ["--slice-by", "nested"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert "column 'nested' must hold one number, boolean or text per row" in err
