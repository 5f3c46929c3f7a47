"""The shipped UCI Adult copy and its loader."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from epsstar.exceptions import InvalidInputError
from epsstar.training.data.datasets import (
    ADULT_CATEGORICAL,
    ADULT_NUMERIC,
    ADULT_SHA256,
    AdultData,
    adult,
    adult_directory,
    read_adult_raw,
)


@pytest.fixture(scope="module")
def data() -> AdultData:
    return adult()


@pytest.mark.parametrize("name", sorted(ADULT_SHA256))
def test_shipped_files_are_the_original_bytes(name: str) -> None:
    digest = hashlib.sha256((adult_directory() / name).read_bytes()).hexdigest()
    assert digest == ADULT_SHA256[name]


def test_attribution_sits_beside_the_data() -> None:
    notice = (adult_directory() / "README.md").read_text(encoding="utf-8")
    assert "Becker" in notice
    assert "Kohavi" in notice
    assert "https://doi.org/10.24432/C5XW20" in notice
    assert "CC BY 4.0" in notice
    assert "creativecommons.org/licenses/by/4.0" in notice
    for name, digest in ADULT_SHA256.items():
        assert name in notice
        assert digest in notice


def test_raw_splits() -> None:
    train, population = read_adult_raw()
    assert len(train) == 32_561
    assert len(population) == 16_281
    for frame in (train, population):
        assert set(frame["income"]) == {"<=50K", ">50K"}
        assert not frame.isna().any().any()
        assert frame[list(ADULT_NUMERIC)].dtypes.map(pd.api.types.is_numeric_dtype).all()
        assert not any(frame[c].str.startswith(" ").any() for c in ADULT_CATEGORICAL)
    # "?" marks a missing value and is kept as a value (rows are not dropped)
    assert (train["workclass"] == "?").sum() == 1836
    assert (population["native-country"] == "?").sum() > 0


def test_counts_labels_and_features(data: AdultData) -> None:
    assert data.n_train == 32_561
    assert data.n_population == 16_281
    assert data.train_features.shape == (32_561, len(data.feature_names))
    assert data.population_features.shape == (16_281, len(data.feature_names))
    assert set(np.unique(data.train_labels)) == {0, 1}
    assert data.train_labels.mean() == pytest.approx(0.2408, abs=0.001)
    assert data.population_labels.mean() == pytest.approx(0.2362, abs=0.001)
    for matrix in (data.train_features, data.population_features):
        assert matrix.dtype == np.float64
        assert np.isfinite(matrix).all()
    assert data.feature_names[: len(ADULT_NUMERIC)] == ADULT_NUMERIC
    assert data.train_features[0, 0] == 39.0  # the first row's age, unscaled
    assert "workclass=?" in data.feature_names


def test_one_hot_is_consistent_between_splits(data: AdultData) -> None:
    names = np.array(data.feature_names)
    for attribute in ADULT_CATEGORICAL:
        columns = np.flatnonzero(np.char.startswith(names, f"{attribute}="))
        assert columns.size >= 2
        levels = [name.split("=", 1)[1] for name in names[columns]]
        assert levels == sorted(levels)
        for matrix in (data.train_features, data.population_features):
            block = matrix[:, columns]
            assert set(np.unique(block)) <= {0.0, 1.0}
            assert block.sum(axis=1).max() == 1.0
        # Every training row sets exactly one category; each category comes from the training split.
        assert (data.train_features[:, columns].sum(axis=1) == 1.0).all()
        assert (data.train_features[:, columns].sum(axis=0) > 0).all()
    raw_train, raw_population = read_adult_raw()
    column = data.feature_names.index("sex=Female")
    assert np.array_equal(
        data.population_features[:, column], (raw_population["sex"] == "Female").to_numpy()
    )
    assert np.array_equal(data.train_features[:, column], (raw_train["sex"] == "Female").to_numpy())


def test_unknown_population_category_sets_no_column(data: AdultData) -> None:
    # "Holand-Netherlands" occurs once in the training split and never in the test split.
    column = data.feature_names.index("native-country=Holand-Netherlands")
    assert data.train_features[:, column].sum() == 1.0
    assert data.population_features[:, column].sum() == 0.0


def test_write_parquet_round_trip(data: AdultData, tmp_path: Path) -> None:
    small = data.subsample(300, 200, seed=1)
    assert small.n_train == 300
    assert small.n_population == 200
    train_path, population_path = small.write_parquet(tmp_path / "data")
    assert [p.name for p in sorted((tmp_path / "data").iterdir())] == [
        "population.parquet",
        "train.parquet",
    ]
    train = pd.read_parquet(train_path)
    assert list(train.columns) == [*data.feature_names, "label"]
    assert np.array_equal(train.drop(columns="label").to_numpy(), small.train_features)
    assert np.array_equal(train["label"].to_numpy(), small.train_labels)
    assert len(pd.read_parquet(population_path)) == 200


def test_subsample_refuses_more_rows_than_the_split(data: AdultData) -> None:
    with pytest.raises(InvalidInputError, match="at most the split sizes"):
        data.subsample(40_000, 100)


def test_a_category_unseen_in_training_sets_no_column() -> None:
    from epsstar.training.data.datasets import ADULT_ATTRIBUTES, _one_hot

    row = {name: 1.0 if name in ADULT_NUMERIC else "a" for name in ADULT_ATTRIBUTES}
    frame = pd.DataFrame([row, {**row, "race": "unseen"}])
    categories = {name: ["a", "b"] for name in ADULT_CATEGORICAL}
    matrix, names = _one_hot(frame, categories)
    race = [i for i, name in enumerate(names) if name.startswith("race=")]
    assert matrix[0, race].tolist() == [1.0, 0.0]
    assert matrix[1, race].tolist() == [0.0, 0.0]
