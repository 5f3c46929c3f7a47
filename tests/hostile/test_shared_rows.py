"""Reference data that share rows with the population must be refused whatever their storage.

A row is the same row when its values are: ``0.1`` stored as float32 in Parquet and as text
in a CSV, ``-0.0`` and ``0.0``, ``3`` and ``3.0`` (the canonical row hash of
``epsstar.audit.data.checks.row_hashes``, which the audit's own shared-row check uses).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from epsstar.cli import main


def _frames(n: int = 40) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(5)
    population = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    population["a"] = population["a"].astype(np.float32)  # values a float32 can hold exactly
    population.loc[0, "b"] = 0.0
    population["label"] = np.arange(n) % 2
    reference = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    reference["label"] = np.arange(n) % 2
    return population, reference


def _refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], reference: Path) -> str:
    code = main(
        [
            "references",
            "--data",
            str(reference),
            "--population",
            str(tmp_path / "population.csv"),
            "--label-column",
            "label",
            "--count",
            "1",
            "--out",
            str(tmp_path / "refs"),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert not (tmp_path / "refs").exists()
    return err.strip()


def test_a_population_row_stored_as_float32_is_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    population, reference = _frames()
    population.astype({"b": np.float64, "c": np.float64}).to_csv(
        tmp_path / "population.csv", index=False
    )
    # The same row, every value stored as float32 (0.1 is not 0.1f as float64).
    shared = population.iloc[[7]].astype({"a": np.float32, "b": np.float32, "c": np.float32})
    pd.concat([reference.astype({"b": np.float32, "c": np.float32}), shared]).to_parquet(
        tmp_path / "reference.parquet", index=False
    )
    line = _refused(tmp_path, capsys, tmp_path / "reference.parquet")
    assert "1 row(s) are also in" in line
    assert line.endswith(f"Found {str(tmp_path / 'reference.parquet')!r}.")


def test_a_population_row_differing_only_in_negative_zero_is_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    population, reference = _frames()
    population.to_csv(tmp_path / "population.csv", index=False)
    shared = population.iloc[[0]].copy()
    shared["b"] = -0.0
    pd.concat([reference, shared]).to_csv(tmp_path / "reference.csv", index=False)
    assert "-0.0" in (tmp_path / "reference.csv").read_text(encoding="utf-8")
    line = _refused(tmp_path, capsys, tmp_path / "reference.csv")
    assert "1 row(s) are also in" in line
    assert "the first at row 40" in line
