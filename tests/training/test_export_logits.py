"""An audit of the trainer's files computes its losses from float logits: exact, and never
clipped at ±36.04 as float32 probabilities that round to 0 or 1 would be."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime
import pytest
import torch

from epsstar.audit.model.plugins import get_loader
from epsstar.statistics.losses import MAX_ABS_LOGIT, compute_losses
from epsstar.training.data.tables import TabularData
from epsstar.training.runs.export import export_onnx, export_torchscript, write_model_dir
from epsstar.training.trainer import TrainingConfig, train

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _torch_logits(model: torch.nn.Module, features: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        tensor = torch.as_tensor(features, dtype=torch.float32)
        return model.network(model.standardiser(tensor)).double().numpy()


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
    np.testing.assert_allclose(output, expected[:, 0] if task == "binary" else expected, rtol=1e-6)
    labels = table.labels[:300]
    np.testing.assert_allclose(
        compute_losses(labels, output, outputs="logits"),
        compute_losses(labels, expected[:, 0] if task == "binary" else expected, outputs="logits"),
        rtol=1e-6,
    )


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
    np.testing.assert_allclose(exact, (1 - 2 * labels) * logits, rtol=1e-6)
    assert np.abs(exact).max() > 2 * MAX_ABS_LOGIT
    session = onnxruntime.InferenceSession(str(tmp_path / "m.onnx"))
    probabilities, onnx_logits = session.run(
        ["probabilities", "logits"], {"features": features.astype(np.float32)}
    )
    np.testing.assert_allclose(onnx_logits[:, 0], logits, rtol=1e-5)
    clipped = compute_losses(labels, probabilities[:, 0], outputs="probabilities")
    assert np.abs(clipped).max() <= MAX_ABS_LOGIT  # what the probabilities alone would give
