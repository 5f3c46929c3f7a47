"""An audit of the trainer's files computes its losses from float logits: exact, and never
clipped at ±36.04 as float32 probabilities that round to 0 or 1 would be."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime
import pytest
import torch

from epsstar.audit.model.plugins import get_loader
from epsstar.statistics.losses import MAX_ABS_LOGIT, compute_losses
from epsstar.training.data.tables import TabularData
from epsstar.training.runs.export import export_onnx, export_torchscript, write_model_dir
from epsstar.training.trainer import TrainingConfig, train
from tests.numerics import logit_loss_tolerance, module_layers, network_tolerance

pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning"), pytest.mark.kernels]


def _torch_logits(model: torch.nn.Module, features: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        tensor = torch.as_tensor(features, dtype=torch.float32)
        return model.network(model.standardiser(tensor)).double().numpy()


def _logits_tolerance(model: Any, features: np.ndarray) -> np.ndarray:
    """How far two float32 evaluations of the standardiser and network may lie apart."""
    mean, scale = model.standardiser.numpy()
    standardised = (features.astype(np.float32) - mean) / scale
    layers = module_layers(model.network.linears)
    return network_tolerance(layers, standardised, input_roundings=2)


@pytest.mark.parametrize("task", ["binary", "multiclass"])
def test_the_loaders_read_the_trainers_logits_and_names(
    tmp_path: Path, task: str, binary_table: TabularData, multiclass_table: TabularData
) -> None:
    table = binary_table if task == "binary" else multiclass_table
    trained = train(table, TrainingConfig(epochs=1, hidden=(8,)))
    write_model_dir(tmp_path, trained.model, trained.result)
    features = table.features[:300]
    expected = _torch_logits(trained.model, features)
    model = get_loader("torchscript")[0].load(tmp_path / "model.pt")
    assert model.feature_names == table.feature_names
    assert model.n_features == len(table.feature_names)
    assert model.classes == table.classes
    assert model.output_kind == "logits"
    output = model.predict(features)
    tolerance = _logits_tolerance(trained.model, features)
    if task == "binary":
        expected, tolerance = expected[:, 0], tolerance[:, 0]
    np.testing.assert_array_less(np.abs(output - expected), tolerance)
    labels = table.labels[:300]
    found = compute_losses(labels, output, outputs="logits")
    moved = np.abs(found - compute_losses(labels, expected, outputs="logits"))
    np.testing.assert_array_less(moved, logit_loss_tolerance(tolerance))


def test_a_confident_network_is_not_clipped(tmp_path: Path, binary_table: TabularData) -> None:
    trained = train(binary_table, TrainingConfig(epochs=1))
    network = trained.model.network
    with torch.no_grad():  # a network whose logits reach far beyond ±36
        for layer in network.linears:
            layer.weight.mul_(200.0)
            layer.bias.mul_(200.0)
    data = trained.result.data
    export_torchscript(
        trained.model, tmp_path / "m.pt", classes=data.classes, feature_names=data.feature_names
    )
    export_onnx(
        trained.model, tmp_path / "m.onnx", classes=data.classes, feature_names=data.feature_names
    )
    features, labels = binary_table.features, binary_table.labels
    logits = _torch_logits(trained.model, features)[:, 0]
    assert np.abs(logits).max() > 2 * MAX_ABS_LOGIT
    loaded = get_loader("torchscript")[0].load(tmp_path / "m.pt")
    exact = compute_losses(labels, loaded.predict(features), outputs=loaded.output_kind)
    tolerance = _logits_tolerance(trained.model, features)[:, 0]
    np.testing.assert_array_less(np.abs(exact - (1 - 2 * labels) * logits), tolerance)
    assert np.abs(exact).max() > 2 * MAX_ABS_LOGIT
    session = onnxruntime.InferenceSession(str(tmp_path / "m.onnx"))
    probabilities, onnx_logits = session.run(
        ["probabilities", "logits"], {"features": features.astype(np.float32)}
    )
    np.testing.assert_array_less(np.abs(onnx_logits[:, 0] - logits), tolerance)
    clipped = compute_losses(labels, probabilities[:, 0], outputs="probabilities")
    assert np.abs(clipped).max() <= MAX_ABS_LOGIT  # what the probabilities alone would give
