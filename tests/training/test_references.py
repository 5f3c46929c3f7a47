"""``epsstar references``: reference models on halves of a reference split, then audited."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from epsstar.exceptions import InvalidInputError
from epsstar.training.runs.references import DEFAULT_RECIPE, half_rows, read_recipe
from tests.conftest import invoke as _run

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "models"


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped multi-class data cut into train.csv, population.csv, reference.csv."""
    folder = tmp_path_factory.mktemp("references")
    pool = pd.concat(
        [
            pd.read_csv(FIXTURES / "multiclass_train.csv"),
            pd.read_csv(FIXTURES / "multiclass_population.csv"),
        ],
        ignore_index=True,
    )
    order = np.random.default_rng(1).permutation(len(pool))
    for name, part in zip(
        ("train", "population", "reference"), np.split(order, [300, 600]), strict=True
    ):
        pool.iloc[part].to_csv(folder / f"{name}.csv", index=False)
    return folder


def test_halves_are_seeded_distinct_halves() -> None:
    halves = half_rows(11, 3, seed=5)
    assert [rows.size for rows in halves] == [5, 5, 5]
    assert all(np.unique(rows).size == 5 and rows.max() < 11 for rows in halves)
    assert not np.array_equal(halves[0], halves[1])
    assert all(np.array_equal(a, b) for a, b in zip(halves, half_rows(11, 3, seed=5), strict=True))
    with pytest.raises(
        InvalidInputError,
        match="count must be an integer from 1 to 1,000 reference models. Found 0",
    ):
        half_rows(11, 0, seed=5)


def test_without_a_training_json_the_recipe_is_a_stated_proxy() -> None:
    recipe = read_recipe(None)
    assert recipe.proxy
    assert recipe.config == DEFAULT_RECIPE
    assert recipe.to_dict()["proxy"] is True


def test_trained_target_references_and_audit(
    split: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], validate_json: Any
) -> None:
    common = ["--label-column", "label", "--quiet"]
    target = tmp_path / "target"
    train = ["train", "--data", str(split / "train.csv"), "--epochs", "3", "--hidden", "16"]
    assert _run([*train, "--batch-size", "32", "--out", str(target), *common], capsys)[0] == 0
    code, _, err = _run(
        [
            "references",
            "--data",
            str(split / "reference.csv"),
            "--count",
            "2",
            "--recipe",
            str(target / "training.json"),
            "--population",
            str(split / "population.csv"),
            "--out",
            str(tmp_path / "refs"),
            "--threads",
            "1",
            *common,
        ],
        capsys,
    )
    assert code == 0, err
    document = json.loads((tmp_path / "refs" / "references.json").read_text())
    validate_json("references", document)
    assert document["recipe"]["proxy"] is False
    assert document["recipe"]["hidden"] == [16]
    assert document["recipe"]["epochs"] == 3
    assert [model["n_records"] for model in document["models"]] == [200, 200]
    models = [model["model"] for model in document["models"]]
    out = tmp_path / "audit.json"
    audit = [
        "audit",
        str(target / "model.onnx"),
        "--train",
        str(split / "train.csv"),
        "--population",
        str(split / "population.csv"),
        "--reference-models",
        *models,
        "--attack",
        "lira",
        "rmia",
        "--json",
        str(out),
        *common,
    ]
    code, _, err = _run(audit, capsys)
    assert code == 0, err
    result = json.loads(out.read_text())
    validate_json("audit", result)
    assert [attack["attack"] for attack in result["attacks"]] == ["lira", "rmia"]
    assert [entry["path"] for entry in result["provenance"]["reference_models"]] == models


def test_reference_rows_shared_with_the_population_are_refused(
    split: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mixed = tmp_path / "mixed.csv"
    pd.concat(
        [pd.read_csv(split / "reference.csv"), pd.read_csv(split / "population.csv").iloc[:3]]
    ).to_csv(mixed, index=False)
    args = ["references", "--data", str(mixed), "--label-column", "label", "--count", "1"]
    code, _, err = _run(
        [*args, "--population", str(split / "population.csv"), "--out", str(tmp_path / "r")],
        capsys,
    )
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "3 row(s) are also in" in err
    assert err.strip().endswith(f"Found {str(mixed)!r}.")
    assert not (tmp_path / "r").exists()
