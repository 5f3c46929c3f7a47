"""Exported models name their classes, and the audit reads them from the model files."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import onnx
import pandas as pd
import pytest
import torch

from epsstar.audit.model.class_labels import CLASSES_KEY, classes_from_text, classes_to_text
from epsstar.audit.model.plugins import get_loader
from epsstar.exceptions import InputFileError, InvalidInputError, PoorFitWarning
from epsstar.training.data.tables import TabularData
from epsstar.training.runs.export import export_onnx, export_torchscript, write_model_dir
from epsstar.training.runs.pipeline import load_inputs
from epsstar.training.trainer import TrainedModel, TrainingConfig, train
from tests.conftest import audit_files

# Sorted ("ant", "bee", "cat", "dog"), which is not the order of first appearance.
ANIMALS = np.array(["dog", "ant", "cat", "bee"], dtype=object)


def _tables(table: TabularData, folder: Path, names: np.ndarray) -> tuple[Path, Path]:
    frame = pd.DataFrame(table.features, columns=list(table.feature_names))
    frame["label"] = names[table.labels]
    half = len(frame) * 2 // 3
    train_path, population_path = folder / "train.csv", folder / "population.parquet"
    frame.iloc[:half].to_csv(train_path, index=False)
    frame.iloc[half:].to_parquet(population_path)
    return train_path, population_path


def _train_and_export(train_path: Path, population_path: Path, out: Path) -> TrainedModel:
    data, population = load_inputs(train_path, "label", population_path)
    trained = train(data, TrainingConfig(epochs=2, hidden=(8,)), population=population)
    out.mkdir()
    write_model_dir(out, trained.model, trained.result)
    return trained


def _quiet_audit(model: Path, train_path: Path, population_path: Path, **options: object):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PoorFitWarning)
        return audit_files(model, train_path, population_path, label_column="label", **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_trained_model_classes_round_trip_through_both_loaders(
    tmp_path: Path, task: str, binary_table: TabularData, multiclass_table: TabularData
) -> None:
    table = binary_table if task == "binary" else multiclass_table
    names = np.array(["yes", "no"], dtype=object) if task == "binary" else ANIMALS
    train_path, population_path = _tables(table, tmp_path, names)
    trained = _train_and_export(train_path, population_path, tmp_path / "model")
    expected = ("no", "yes") if task == "binary" else ("ant", "bee", "cat", "dog")
    assert trained.result.data.classes == expected
    for loader, file in (("onnx", "model.onnx"), ("torchscript", "model.pt")):
        plugin, _ = get_loader(loader)
        assert plugin.load(tmp_path / "model" / file).classes == expected
        result = _quiet_audit(tmp_path / "model" / file, train_path, population_path)
        provenance = result.provenance
        assert provenance.classes == tuple(expected)
        assert provenance.classes_from == "model"
        # The string labels reach the right output columns: the audit's accuracy is the
        # trainer's own (a swapped mapping would give a very different figure).
        train_utility, population_utility = result.utility["train"], result.utility["population"]
        assert trained.result.utility_population is not None
        assert train_utility.accuracy == pytest.approx(
            trained.result.utility_train.accuracy, abs=2e-3
        )
        assert population_utility.accuracy == pytest.approx(
            trained.result.utility_population.accuracy, abs=2e-3
        )


def test_the_metadata_key_is_where_other_tools_can_read_it(
    tmp_path: Path, binary_table: TabularData
) -> None:
    trained = train(binary_table, TrainingConfig(epochs=1))
    export_onnx(trained.model, tmp_path / "m.onnx", classes=("0", "1"))
    props = {p.key: p.value for p in onnx.load(str(tmp_path / "m.onnx")).metadata_props}
    assert json.loads(props[CLASSES_KEY]) == ["0", "1"]
    export_torchscript(trained.model, tmp_path / "m.pt", classes=("0", "1"))
    extra = {CLASSES_KEY: ""}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.load(str(tmp_path / "m.pt"), _extra_files=extra)
    assert json.loads(extra[CLASSES_KEY]) == ["0", "1"]
    # Without classes nothing is recorded, and the loaders report none.
    export_onnx(trained.model, tmp_path / "bare.onnx")
    export_torchscript(trained.model, tmp_path / "bare.pt")
    assert get_loader("onnx")[0].load(tmp_path / "bare.onnx").classes is None
    assert get_loader("torchscript")[0].load(tmp_path / "bare.pt").classes is None


def test_classes_argument_and_column_order(tmp_path: Path, binary_table: TabularData) -> None:
    train_path, population_path = _tables(
        binary_table, tmp_path, np.array(["no", "yes"], dtype=object)
    )
    trained = train(binary_table, TrainingConfig(epochs=2))
    export_onnx(trained.model, tmp_path / "bare.onnx")
    with pytest.raises(InvalidInputError, match="labels must be classes of the model"):
        _quiet_audit(tmp_path / "bare.onnx", train_path, population_path)
    given = _quiet_audit(tmp_path / "bare.onnx", train_path, population_path, classes=["no", "yes"])
    assert given.provenance.classes == ("no", "yes")
    assert given.provenance.classes_from == "argument"
    (tmp_path / "numeric").mkdir()
    numeric_train, numeric_population = _tables(
        binary_table, tmp_path / "numeric", np.array([0, 1], dtype=object)
    )
    plain = _quiet_audit(tmp_path / "bare.onnx", numeric_train, numeric_population)
    assert plain.provenance.classes_from == "column order"
    assert plain.provenance.classes == ("0", "1")
    assert plain.utility["train"].accuracy == given.utility["train"].accuracy
    with pytest.raises(InvalidInputError, match="classes must be a non-empty sequence"):
        _quiet_audit(tmp_path / "bare.onnx", train_path, population_path, classes="ny")


def test_class_label_text() -> None:
    assert classes_from_text(classes_to_text(("a", 2, 1.5, True)), "m") == ("a", 2, 1.5, True)
    assert classes_from_text(b"", "m") is None
    assert classes_from_text(classes_to_text(np.array([0, 1])), "m") == (0, 1)
    for bad in ("not json", "[]", '{"a": 1}', "[[1], [2]]", "[null]"):
        with pytest.raises(InputFileError, match=r"m\.onnx: the 'epsstar.classes' metadata must"):
            classes_from_text(bad, "m.onnx")
    with pytest.raises(InvalidInputError, match="strings or numbers"):
        classes_to_text([None])  # type: ignore[list-item]


def test_bad_class_metadata_is_an_input_file_error(
    tmp_path: Path, binary_table: TabularData
) -> None:
    trained = train(binary_table, TrainingConfig(epochs=1))
    export_onnx(trained.model, tmp_path / "m.onnx")
    proto = onnx.load(str(tmp_path / "m.onnx"))
    onnx.helper.set_model_props(proto, {CLASSES_KEY: "no, yes"})
    onnx.save(proto, str(tmp_path / "m.onnx"))
    with pytest.raises(
        InputFileError, match=r"m\.onnx: the 'epsstar.classes' metadata must .* Found 'no, yes'\."
    ):
        get_loader("onnx")[0].load(tmp_path / "m.onnx")
