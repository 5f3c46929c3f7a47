"""Small generated data sets for the trainer tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from epsstar.training.data.tables import TabularData


def make_table(n: int, d: int, n_classes: int, seed: int) -> TabularData:
    """Linearly separable-ish features with labels 0..K−1 (as text)."""
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(n, d)) * rng.uniform(0.5, 5.0, size=d) + rng.normal(size=d)
    weights = rng.normal(size=(d, n_classes))
    scores = 3.0 * ((features - features.mean(0)) / features.std(0)) @ weights
    labels = np.argmax(scores + rng.gumbel(size=scores.shape), axis=1).astype(np.int64)
    return TabularData(
        features=features,
        labels=labels,
        feature_names=tuple(f"f{j}" for j in range(d)),
        classes=tuple(str(k) for k in range(n_classes)),
        label_column="label",
        source="generated",
    )


@pytest.fixture(scope="session")
def binary_table() -> TabularData:
    return make_table(1200, 4, 2, seed=1)


@pytest.fixture(scope="session")
def multiclass_table() -> TabularData:
    return make_table(900, 5, 4, seed=2)


@pytest.fixture(scope="session")
def csv_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A binary task as training CSV and population Parquet, labels 'no'/'yes'."""
    folder = tmp_path_factory.mktemp("tables")
    table = make_table(1500, 4, 2, seed=3)
    frame = pd.DataFrame(table.features, columns=list(table.feature_names))
    frame["label"] = np.where(table.labels == 1, "yes", "no")
    train, population = folder / "train.csv", folder / "population.parquet"
    frame.iloc[:1000].to_csv(train, index=False)
    frame.iloc[1000:].to_parquet(population)
    return train, population
