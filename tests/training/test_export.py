"""Exported files: ONNX gives the torch model's probabilities and logits, TorchScript its
logits; both name their input columns."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
import torch

from epsstar.audit.model.class_labels import FEATURES_KEY, OUTPUTS_KEY
from epsstar.exceptions import InvalidInputError
from epsstar.training.data.tables import TabularData
from epsstar.training.runs.export import prepare_output_dir, write_model_dir
from epsstar.training.trainer import TrainingConfig, train
from tests.numerics import (
    SIGMOID_ROUNDINGS,
    gamma,
    module_layers,
    network_tolerance,
    probability_tolerance,
)


@pytest.mark.kernels
@pytest.mark.parametrize("hidden", [(), (12, 6)])
@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_exported_files_agree_with_torch(
    tmp_path: Path,
    hidden: tuple[int, ...],
    task: str,
    binary_table: TabularData,
    multiclass_table: TabularData,
) -> None:
    table = binary_table if task == "binary" else multiclass_table
    trained = train(
        table, TrainingConfig(standardise_on="data", epochs=1, hidden=hidden, noise_multiplier=1.0)
    )
    folder = prepare_output_dir(tmp_path / "model", overwrite=False)
    record = write_model_dir(folder, trained.model, trained.result)
    raw = table.features[:200].astype(np.float32)
    with torch.no_grad():
        expected = trained.model(torch.from_numpy(raw)).numpy()
        logits = trained.model.network(trained.model.standardiser(torch.from_numpy(raw))).numpy()
    width = 1 if task == "binary" else table.n_classes
    assert expected.shape == (200, width)
    # two float32 evaluations of the standardiser (2 roundings) and the network
    mean, scale = trained.model.standardiser.numpy()
    layers = module_layers(trained.model.network.linears)
    scores = network_tolerance(layers, (raw - mean) / scale, input_roundings=2)
    if task == "multiclass":  # a float32 softmax's row: the sum of its classes, rounded
        rounding = gamma(width + SIGMOID_ROUNDINGS)
        np.testing.assert_array_less(np.abs(expected.sum(axis=1) - 1.0), rounding)
    # the logits are what the probabilities are made of: this float32 sigmoid or softmax
    if task == "binary":
        made = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
    else:
        softmax = np.exp(logits - logits.max(axis=1, keepdims=True)).astype(np.float64)
        made = softmax / softmax.sum(axis=1, keepdims=True)
    once = probability_tolerance(np.zeros_like(scores), expected, rounded=1)
    np.testing.assert_array_less(np.abs(made - expected), once)
    session = onnxruntime.InferenceSession(str(folder / "model.onnx"))
    assert [output.name for output in session.get_outputs()] == ["probabilities", "logits"]
    onnx_out, onnx_logits = session.run(["probabilities", "logits"], {"features": raw})
    both = probability_tolerance(scores, expected, rounded=2)
    np.testing.assert_array_less(np.abs(onnx_out - expected), both)
    np.testing.assert_array_less(np.abs(onnx_logits - logits), scores)
    extra = {FEATURES_KEY: "", OUTPUTS_KEY: ""}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        scripted = torch.jit.load(str(folder / "model.pt"), _extra_files=extra)
    with torch.no_grad():
        script_out = scripted(torch.from_numpy(raw)).numpy()
    np.testing.assert_array_less(np.abs(script_out - logits), scores)
    assert extra[OUTPUTS_KEY] == b"logits"
    assert json.loads(extra[FEATURES_KEY]) == list(table.feature_names)
    props = {p.key: p.value for p in onnx.load(str(folder / "model.onnx")).metadata_props}
    assert json.loads(props[FEATURES_KEY]) == list(table.feature_names)
    document = json.loads((folder / "training.json").read_text())
    assert document == json.loads(json.dumps(record.to_dict()))
    assert document["files"] == {"onnx": "model.onnx", "torchscript": "model.pt"}
    assert document["data"]["feature_names"] == list(table.feature_names)
    assert not list(folder.glob("*.tmp"))
    assert not list(folder.glob(".*"))


def test_output_directory_rules(tmp_path: Path) -> None:
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "training.json").write_text("{}")
    with pytest.raises(InvalidInputError, match="not empty; pass --overwrite"):
        prepare_output_dir(tmp_path / "busy", overwrite=False)
    prepare_output_dir(tmp_path / "busy", overwrite=True)
    assert not (tmp_path / "busy" / "training.json").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidInputError, match="must name a folder, not a file"):
        prepare_output_dir(tmp_path / "file", overwrite=True)
    assert prepare_output_dir(tmp_path / "new" / "deep", overwrite=False).is_dir()
