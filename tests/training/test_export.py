"""Exported files: ONNX and TorchScript give the torch model's probabilities."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import onnxruntime
import pytest
import torch

from epsstar.exceptions import InvalidInputError
from epsstar.training.data import TabularData
from epsstar.training.export import prepare_output_dir, write_model_dir
from epsstar.training.trainer import TrainingConfig, train


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
    trained = train(table, TrainingConfig(epochs=1, hidden=hidden, noise_multiplier=1.0))
    folder = prepare_output_dir(tmp_path / "model", overwrite=False)
    record = write_model_dir(folder, trained.model, trained.result)
    raw = table.features[:200].astype(np.float32)
    with torch.no_grad():
        expected = trained.model(torch.from_numpy(raw)).numpy()
    width = 1 if task == "binary" else table.n_classes
    assert expected.shape == (200, width)
    if task == "multiclass":
        np.testing.assert_allclose(expected.sum(axis=1), 1.0, atol=1e-5)
    session = onnxruntime.InferenceSession(str(folder / "model.onnx"))
    (onnx_out,) = session.run(["probabilities"], {"features": raw})
    np.testing.assert_allclose(onnx_out, expected, atol=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        scripted = torch.jit.load(str(folder / "model.pt"))
    with torch.no_grad():
        script_out = scripted(torch.from_numpy(raw)).numpy()
    np.testing.assert_allclose(script_out, expected, atol=1e-5)
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
    with pytest.raises(InvalidInputError, match="not a directory"):
        prepare_output_dir(tmp_path / "file", overwrite=True)
    assert prepare_output_dir(tmp_path / "new" / "deep", overwrite=False).is_dir()
