"""An audit of objects in memory equals the audit of the same objects saved to files.

The model object predicts with the same arithmetic as the file it is saved as, and a table in
memory is read through the same reader as the file a user would write: every number of the
JSON document is equal, bit for bit. Only what names the inputs differs (the provenance, the
model's digest, the warnings that quote a file's path).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import epsstar
from tests.loaders.model_objects import KINDS, data, population, sklearn_pipeline

COLUMNS = ["x0", "x1", "x2", "x3"]
# The models record no column names (columns by position) and a small network's logits may
# look like probabilities: the same warnings on both sides, compared in the documents.
pytestmark = pytest.mark.filterwarnings("ignore::epsstar.exceptions.EpsstarWarning")

#: What names the inputs rather than measures them.
NAMING = ("provenance", "model_sha256", "warnings")


def frame(part: tuple[np.ndarray, np.ndarray]) -> pd.DataFrame:
    return pd.DataFrame(part[0], columns=COLUMNS).assign(label=part[1])


def numbers(result: Any) -> dict[str, Any]:
    document = result.to_dict()
    return {key: value for key, value in document.items() if key not in NAMING}


def files(folder: Path) -> tuple[Path, Path]:
    train, other = folder / "train.parquet", folder / "population.parquet"
    frame(data()).to_parquet(train, index=False)
    frame(population()).to_parquet(other, index=False)
    return train, other


@pytest.mark.parametrize("kind", KINDS)
def test_a_model_object_audits_as_its_file(kind: str, tmp_path: Path) -> None:
    _, make, trust = KINDS[kind]
    obj, path = make(tmp_path)
    train, other = files(tmp_path)
    from_file = epsstar.audit(path, train, other, label="label", trust=trust)
    in_memory = epsstar.audit(obj, frame(data()), frame(population()), label="label")
    assert in_memory.epsilon_star == from_file.epsilon_star
    assert in_memory.lower_bound.epsilon == from_file.lower_bound.epsilon
    assert np.array_equal(in_memory.train_losses, from_file.train_losses)
    assert numbers(in_memory) == numbers(from_file)
    assert [line.split(":")[0] for line in in_memory.warnings] == [
        line.split(":")[0] for line in from_file.warnings
    ]
    provenance = in_memory.provenance
    assert provenance.model.startswith(f"in memory: {type(obj).__module__}.")
    assert provenance.loader.name == from_file.provenance.loader.name
    assert (provenance.train, provenance.population) == (
        "the training DataFrame",
        "the population DataFrame",
    )


def polars_frame(part: tuple[np.ndarray, np.ndarray]) -> Any:
    polars = pytest.importorskip("polars")
    return polars.from_pandas(frame(part))


#: Each kind of table in memory, and how it is called in the provenance.
TABLES = {
    "pandas": (frame, "DataFrame"),
    "pyarrow": (lambda part: pa.Table.from_pandas(frame(part)), "Arrow table"),
    "polars": (polars_frame, "polars DataFrame"),
}


@pytest.mark.parametrize("kind", TABLES)
def test_a_table_in_memory_audits_as_its_parquet_file(kind: str, tmp_path: Path) -> None:
    make, called = TABLES[kind]
    _, model = sklearn_pipeline(tmp_path)
    from_file = epsstar.audit(model, *files(tmp_path), label="label", trust=True)
    in_memory = epsstar.audit(model, make(data()), make(population()), label="label", trust=True)
    assert numbers(in_memory) == numbers(from_file)
    assert in_memory.provenance.train == f"the training {called}"
    if kind == "pandas":  # staged as DataFrame.to_parquet(index=False) writes it: one digest
        assert in_memory.provenance.train_sha256 == from_file.provenance.train_sha256


def test_arrays_audit_as_the_npz_file_np_savez_writes(tmp_path: Path) -> None:
    _, model = sklearn_pipeline(tmp_path)
    for name, part in (("train", data()), ("population", population())):
        np.savez(tmp_path / f"{name}.npz", X=part[0], label=part[1])
    from_file = epsstar.audit(
        model, tmp_path / "train.npz", tmp_path / "population.npz", label="label", trust=True
    )
    in_memory = epsstar.audit(model, data(), population(), label="label", trust=True)
    assert numbers(in_memory) == numbers(from_file)
    assert in_memory.provenance.train == "the training (X, y) arrays"
    assert in_memory.provenance.train_sha256 == from_file.provenance.train_sha256


def test_a_lightgbm_classifier_brings_its_class_labels(tmp_path: Path) -> None:
    lgb = pytest.importorskip("lightgbm")
    named = {0: "no", 1: "yes"}
    train, other = frame(data()), frame(population())
    train["label"], other["label"] = train["label"].map(named), other["label"].map(named)
    model = lgb.LGBMClassifier(n_estimators=5, verbose=-1, n_jobs=1)
    model.fit(train[COLUMNS], train["label"])
    model.booster_.save_model(str(tmp_path / "model.txt"))
    train.to_parquet(tmp_path / "train.parquet", index=False)
    other.to_parquet(tmp_path / "population.parquet", index=False)
    from_file = epsstar.audit(
        tmp_path / "model.txt",
        tmp_path / "train.parquet",
        tmp_path / "population.parquet",
        label="label",
        classes=["no", "yes"],  # the file records no labels
    )
    in_memory = epsstar.audit(model, train, other, label="label")
    assert numbers(in_memory) == numbers(from_file)
    assert in_memory.provenance.classes_from == "model"
