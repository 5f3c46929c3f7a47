"""ONNX graphs with several typed inputs, grouped columns, N-D inputs, recorded names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from epsstar.audit.model.class_labels import FEATURES_KEY, features_to_text
from epsstar.audit.model.features import Features
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.loaders.onnx import OnnxLoader
from tests.numerics import module_tolerance

STRING_TO_FLOAT = {"a": 1.0, "b": 2.0}


def _save(path: Path, nodes: list, inputs: list, outputs: list, **kw: object) -> Path:
    graph = helper.make_graph(nodes, "g", inputs, outputs, **kw)  # type: ignore[arg-type]
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)]
    onnx.save(helper.make_model(graph, opset_imports=opsets), str(path))
    return path


def _typed_inputs_model(path: Path) -> Path:
    """y = [float(f) + int(i) + label_encode(s) + bool(b)] as one column of scores."""
    nodes = [
        helper.make_node("Cast", ["i"], ["i_f"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["b"], ["b_f"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["d"], ["d_f"], to=TensorProto.FLOAT),
        helper.make_node(
            "LabelEncoder",
            ["s"],
            ["s_f"],
            domain="ai.onnx.ml",
            keys_strings=list(STRING_TO_FLOAT),
            values_floats=list(STRING_TO_FLOAT.values()),
            default_float=-100.0,
        ),
        helper.make_node("Sum", ["f", "i_f", "s_f", "b_f", "d_f"], ["y"]),
    ]
    inputs = [
        helper.make_tensor_value_info("f", TensorProto.FLOAT, [None, 1]),
        helper.make_tensor_value_info("i", TensorProto.INT64, [None, 1]),
        helper.make_tensor_value_info("s", TensorProto.STRING, [None, 1]),
        helper.make_tensor_value_info("b", TensorProto.BOOL, [None, 1]),
        helper.make_tensor_value_info("d", TensorProto.DOUBLE, [None]),
    ]
    d_2d = helper.make_node("Unsqueeze", ["d_f", "axis"], ["d_col"])
    nodes[2:3] = [nodes[2], d_2d]
    nodes[-1] = helper.make_node("Sum", ["f", "i_f", "s_f", "b_f", "d_col"], ["y"])
    axis = helper.make_tensor("axis", TensorProto.INT64, [1], [1])
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 1])]
    return _save(path, nodes, inputs, outputs, initializer=[axis])


def _typed_features() -> Features:
    return Features(
        ("f", "i", "s", "b", "d"),
        (
            np.array([0.5, -1.0, 2.0]),
            np.array([1, 2, 3], dtype=np.int64),
            np.array(["a", "b", "zzz"], dtype=object),
            np.array([True, False, True]),
            np.array([0.25, 0.0, -0.5]),
        ),
    )


def test_typed_inputs_are_fed_by_name_and_cast(tmp_path: Path) -> None:
    model = OnnxLoader().load(_typed_inputs_model(tmp_path / "typed.onnx"), outputs="logits")
    assert model.feature_names == ("f", "i", "s", "b", "d")
    assert model.n_features == 5
    expected = np.array([0.5 + 1 + 1 + 1 + 0.25, -1 + 2 + 2 + 0 + 0, 2 + 3 - 100 + 1 - 0.5])
    features = _typed_features()
    np.testing.assert_allclose(model.predict(features), expected, rtol=1e-6)
    # by name: the same columns in another order give the same predictions
    order = [4, 2, 0, 3, 1]
    shuffled = Features(
        tuple(features.names[j] for j in order), tuple(features.columns[j] for j in order)
    )
    np.testing.assert_allclose(model.predict(shuffled), expected, rtol=1e-6)


def test_numbers_given_to_a_string_input_become_text(tmp_path: Path) -> None:
    model = OnnxLoader().load(_typed_inputs_model(tmp_path / "typed.onnx"), outputs="logits")
    features = _typed_features()
    numbers = Features(
        features.names, (*features.columns[:2], np.array([1, 2, 3]), *features.columns[3:])
    )
    # "1", "2", "3" are not keys of the encoder: -100 each
    expected = np.array([0.5 + 1 - 100 + 1 + 0.25, -1 + 2 - 100 + 0 + 0, 2 + 3 - 100 + 1 - 0.5])
    np.testing.assert_allclose(model.predict(numbers), expected, rtol=1e-6)


@pytest.mark.parametrize(
    ("column", "values", "needs"),
    [
        ("i", np.array([1.5, 2.0, 3.0]), "whole numbers"),
        ("f", np.array(["x", "y", "z"], dtype=object), "numbers"),
        ("b", np.array([0, 2, 1]), "booleans or 0/1"),
        ("i", np.array([1e30, 0.0, 0.0]), "values that fit int64"),
    ],
)
def test_refusals_name_the_input_its_type_and_the_column(
    tmp_path: Path, column: str, values: np.ndarray, needs: str
) -> None:
    model = OnnxLoader().load(_typed_inputs_model(tmp_path / "typed.onnx"), outputs="logits")
    features = _typed_features()
    columns = list(features.columns)
    columns[features.names.index(column)] = values
    with pytest.raises(InvalidInputError) as caught:
        model.predict(Features(features.names, tuple(columns)))
    message = str(caught.value)
    assert f"column {column!r} must hold {needs} for input {column!r}" in message
    assert "tensor(" in message
    assert "\n" not in message
    assert "Found" in message


def test_grouped_inputs_take_consecutive_columns_by_declared_width(tmp_path: Path) -> None:
    nodes = [helper.make_node("Concat", ["numeric", "flag"], ["y"], axis=1)]
    inputs = [
        helper.make_tensor_value_info("numeric", TensorProto.FLOAT, [None, 3]),
        helper.make_tensor_value_info("flag", TensorProto.FLOAT, [None, 1]),
    ]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4])]
    model = OnnxLoader().load(_save(tmp_path / "g.onnx", nodes, inputs, outputs), outputs="logits")
    assert model.feature_names is None
    assert model.n_features == 4
    matrix = np.arange(8.0).reshape(2, 4)
    np.testing.assert_allclose(model.predict(Features.from_matrix(matrix)), matrix)
    with pytest.raises(InvalidInputError, match="must have 4 columns"):
        model.predict(Features.from_matrix(matrix[:, :3]))


def _cnn_onnx(path: Path, dynamic_size: bool = False) -> tuple[Path, torch.nn.Module]:
    torch.manual_seed(0)
    network = torch.nn.Sequential(
        torch.nn.Conv2d(1, 3, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(3, 4),
    )  # fmt: skip
    axes = {0: "n", 2: "h", 3: "w"} if dynamic_size else {0: "n"}
    torch.onnx.export(
        network.eval(), (torch.zeros(2, 1, 8, 8),), str(path), input_names=["image"],
        output_names=["logits"], dynamic_axes={"image": axes, "logits": {0: "n"}}, dynamo=False,
    )  # fmt: skip
    return path, network


@pytest.mark.kernels
def test_an_image_model_predicts_as_torch_does(tmp_path: Path) -> None:
    path, network = _cnn_onnx(tmp_path / "cnn.onnx")
    images = np.random.default_rng(0).random((30, 1, 8, 8)).astype(np.float32)
    expected = network(torch.from_numpy(images)).detach().numpy()
    model = OnnxLoader().load(path)
    assert model.output_kind == "logits"
    assert model.n_features is None
    # torch's and onnxruntime's float32 kernels; the pool sums 64 positions and divides
    tolerance = module_tolerance(network, images, pooled=64 + 1)
    found = model.predict(Features(("X",), (images,)))
    np.testing.assert_array_less(np.abs(found - expected), tolerance)
    flat = Features.from_matrix(images.reshape(30, 64))  # 64 pixel columns, reshaped
    np.testing.assert_array_less(np.abs(model.predict(flat) - expected), tolerance)
    with pytest.raises(InvalidInputError, match="must hold 64 values"):
        model.predict(Features.from_matrix(images.reshape(30, 64)[:, :60]))


@pytest.mark.kernels
def test_dynamic_image_dimensions_come_from_the_records(tmp_path: Path) -> None:
    path, network = _cnn_onnx(tmp_path / "cnn.onnx", dynamic_size=True)
    images = np.random.default_rng(1).random((5, 1, 6, 6)).astype(np.float32)
    expected = network(torch.from_numpy(images)).detach().numpy()
    model = OnnxLoader().load(path, outputs="logits")
    tolerance = module_tolerance(network, images, pooled=36 + 1)
    found = model.predict(Features(("X",), (images,)))
    np.testing.assert_array_less(np.abs(found - expected), tolerance)
    with pytest.raises(InvalidInputError, match="dynamic dimensions of input 'image'"):
        model.predict(Features.from_matrix(images.reshape(5, 36)))


def _matrix_model(path: Path, width: int, names: list[str]) -> Path:
    nodes = [helper.make_node("Identity", ["x"], ["y"])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, width])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, width])]
    _save(path, nodes, inputs, outputs)
    proto = onnx.load(str(path))
    helper.set_model_props(proto, {FEATURES_KEY: features_to_text(names)})
    onnx.save(proto, str(path))
    return path


def test_recorded_feature_names_are_read(tmp_path: Path) -> None:
    model = OnnxLoader().load(_matrix_model(tmp_path / "m.onnx", 3, ["a", "b-c", "d"]))
    assert model.feature_names == ("a", "b-c", "d")
    with pytest.raises(InputFileError, match="must name one column per input feature") as caught:
        OnnxLoader().load(_matrix_model(tmp_path / "bad.onnx", 3, ["a", "b"]))
    assert "bad.onnx" in str(caught.value)


def test_a_graph_no_layout_fits_is_refused(tmp_path: Path) -> None:
    nodes = [helper.make_node("Identity", ["x"], ["y"]), helper.make_node("Identity", ["z"], ["w"])]
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 1, 2]),
        helper.make_tensor_value_info("z", TensorProto.FLOAT, [None, 1]),
    ]
    outputs = [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 1, 2]),
        helper.make_tensor_value_info("w", TensorProto.FLOAT, [None, 1]),
    ]
    with pytest.raises(InputFileError, match="one N-D input") as caught:
        OnnxLoader().load(_save(tmp_path / "mixed.onnx", nodes, inputs, outputs))
    assert "x tensor(float) [None, 1, 2]" in str(caught.value)
