"""ONNX models with external data are opened by path: sidecars beside the model, checked."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import helper, numpy_helper

from epsstar.exceptions import InputFileError
from epsstar.loaders.onnx import OnnxLoader
from tests.numerics import module_layers, network_tolerance


def _export(folder: Path, seed: int) -> tuple[Path, torch.nn.Module]:
    """A torch MLP exported with its weights in ``model.onnx.data`` beside ``model.onnx``."""
    torch.manual_seed(seed)
    network = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    folder.mkdir(parents=True)
    model = folder / "model.onnx"
    torch.onnx.export(
        network, (torch.zeros(2, 4),), str(model), input_names=["x"], output_names=["y"],
        dynamic_axes={"x": {0: "n"}, "y": {0: "n"}}, dynamo=False,
    )  # fmt: skip
    onnx.save(
        onnx.load(str(model)), str(model), save_as_external_data=True,
        all_tensors_to_one_file=True, location="model.onnx.data", size_threshold=0,
    )  # fmt: skip
    assert (folder / "model.onnx.data").stat().st_size > 0
    return model, network


def test_weights_come_from_the_models_folder_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model_a, network_a = _export(tmp_path / "run_a", seed=1)
    _model_b, network_b = _export(tmp_path / "run_b", seed=2)
    monkeypatch.chdir(tmp_path / "run_b")  # a relative location would find run_b's weights
    x = np.random.default_rng(0).normal(size=(20, 4))
    expected_a = network_a(torch.as_tensor(x, dtype=torch.float32)).detach().numpy()
    expected_b = network_b(torch.as_tensor(x, dtype=torch.float32)).detach().numpy()
    assert np.abs(expected_a - expected_b).max() > 0.1
    model = OnnxLoader().load(Path(os.path.relpath(model_a)))
    tolerance = network_tolerance(module_layers(network_a), x)  # torch's and onnxruntime's
    np.testing.assert_array_less(np.abs(model.predict(x) - expected_a), tolerance)
    assert [p.name for p in model.files] == ["model.onnx", "model.onnx.data"]
    assert model.files[1].parent == model_a.parent.resolve()


def _with_location(model: Path, location: str) -> Path:
    proto = onnx.load(str(model), load_external_data=False)
    for tensor in proto.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = location
    onnx.save(proto, str(model))
    return model


@pytest.mark.parametrize("where", ["absolute", "parent", "symlink"])
def test_a_location_outside_the_models_folder_is_refused(tmp_path: Path, where: str) -> None:
    model, _ = _export(tmp_path / "run", seed=1)
    outside = tmp_path / "elsewhere.data"
    outside.write_bytes((model.parent / "model.onnx.data").read_bytes())
    location = {"absolute": str(outside), "parent": "../elsewhere.data", "symlink": "link"}
    if where == "symlink":
        (model.parent / "link").symlink_to(outside)
    _with_location(model, location[where])
    with pytest.raises(InputFileError, match="external data must") as caught:
        OnnxLoader().load(model)
    assert str(model) in str(caught.value)
    assert "\n" not in str(caught.value)
    assert str(caught.value).endswith(".")


def test_a_missing_sidecar_names_the_file_and_the_remedy(tmp_path: Path) -> None:
    model, _ = _export(tmp_path / "run", seed=1)
    (model.parent / "model.onnx.data").unlink()
    with pytest.raises(InputFileError) as caught:
        OnnxLoader().load(model)
    message = str(caught.value)
    assert "model.onnx.data" in message
    assert "export with external_data=False, or keep model.onnx.data beside model.onnx" in message


def test_a_model_without_external_data_lists_only_itself(tmp_path: Path) -> None:
    weights = numpy_helper.from_array(np.eye(2, dtype=np.float32), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [None, 2])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [None, 2])], [weights],
    )  # fmt: skip
    path = tmp_path / "plain.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    model = OnnxLoader().load(path)
    assert model.files == (path,)
    np.testing.assert_allclose(model.predict(np.array([[3.0, -4.0]])), [[3.0, -4.0]])


def _external_values(tensor: onnx.TensorProto, location: str, data: bytes) -> None:
    """Store ``tensor``'s data as ``data`` at ``location`` (external data, offset 0)."""
    tensor.ClearField("float_data")
    tensor.ClearField("int64_data")
    tensor.ClearField("raw_data")
    tensor.data_location = onnx.TensorProto.EXTERNAL
    entry = tensor.external_data.add()
    entry.key, entry.value = "location", location
    size = tensor.external_data.add()
    size.key, size.value = "length", str(len(data))


def _sparse_model(folder: Path, values: np.ndarray) -> Path:
    """``y = x @ W`` with ``W`` a 2×2 sparse initializer whose values live in ``w.bin``."""
    folder.mkdir(parents=True, exist_ok=True)
    dense_values = numpy_helper.from_array(values.astype(np.float32), "W_values")
    indices = numpy_helper.from_array(np.array([0, 3], dtype=np.int64), "W_indices")
    sparse = helper.make_sparse_tensor(dense_values, indices, [2, 2])
    sparse.values.name = "W"
    _external_values(sparse.values, "w.bin", b"")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"])], "g",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [None, 2])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [None, 2])],
        sparse_initializer=[sparse],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = folder / "sparse.onnx"
    onnx.save(model, str(path))
    return path


def test_sparse_initializers_read_their_external_data_from_the_models_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _sparse_model(tmp_path / "run", np.array([2.0, 3.0]))
    proto = onnx.load(str(path), load_external_data=False)
    values = proto.graph.sparse_initializer[0].values
    for entry in values.external_data:
        if entry.key == "length":
            entry.value = "8"
    onnx.save(proto, str(path))
    (path.parent / "w.bin").write_bytes(np.array([2.0, 3.0], dtype=np.float32).tobytes())
    # the same name in the working directory, with other values: it must not be read
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    (elsewhere / "w.bin").write_bytes(np.array([50.0, 70.0], dtype=np.float32).tobytes())
    monkeypatch.chdir(elsewhere)
    model = OnnxLoader().load(path)
    assert [p.name for p in model.files] == ["sparse.onnx", "w.bin"]
    assert model.files[1].parent == path.parent.resolve()
    np.testing.assert_allclose(model.predict(np.array([[1.0, 1.0]])), [[2.0, 3.0]])


@pytest.mark.parametrize("where", ["sparse initializer", "function attribute", "nested graph"])
def test_every_tensor_kind_is_held_to_the_models_folder(tmp_path: Path, where: str) -> None:
    folder = tmp_path / "run"
    path = _sparse_model(folder, np.array([2.0, 3.0]))
    (folder / "w.bin").write_bytes(np.array([2.0, 3.0], dtype=np.float32).tobytes())
    (tmp_path / "outside.bin").write_bytes(np.ones(2).tobytes())
    proto = onnx.load(str(path), load_external_data=False)
    outside = "../outside.bin"
    if where == "sparse initializer":
        tensor = proto.graph.sparse_initializer[0].indices
    elif where == "function attribute":
        const = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.ones(2)))
        function = helper.make_function("local", "f", [], ["c"], [const], [])
        proto.functions.append(function)
        tensor = proto.functions[0].node[0].attribute[0].t
    else:
        inner = helper.make_graph(
            [helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.ones(1)))],
            "inner", [], [helper.make_tensor_value_info("k", onnx.TensorProto.DOUBLE, [1])],
        )  # fmt: skip
        node = helper.make_node("If", ["cond"], ["k"], then_branch=inner, else_branch=inner)
        proto.graph.node.append(node)
        tensor = proto.graph.node[1].attribute[0].g.node[0].attribute[0].t
    _external_values(tensor, outside, b"")
    onnx.save(proto, str(path))
    with pytest.raises(InputFileError, match=r"external data must stay inside the model's"):
        OnnxLoader().load(path)
