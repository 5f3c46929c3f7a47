"""ONNX graphs as 2026 exporters write them: a network returning its logits and their
softmax as two outputs, and constants listed among the graph's inputs (tf2onnx, old IR)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from epsstar.loaders.onnx import OnnxLoader  # noqa: E402
from tests.numerics import network_tolerance, probability_tolerance  # noqa: E402

RNG = np.random.default_rng(0)
WEIGHTS = RNG.normal(size=(4, 3)).astype(np.float32)
BIAS = RNG.normal(size=3).astype(np.float32)


def _graph(path: Path, *, order: tuple[str, str], constants_as_inputs: bool = False) -> Path:
    """x @ W + b → 'scores'; Softmax → 'activated' (no name says which is which); both
    graph outputs, in ``order``."""
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])]
    if constants_as_inputs:  # what tf2onnx and IR < 4 write: initializers listed as inputs
        inputs += [
            helper.make_tensor_value_info("W", TensorProto.FLOAT, [4, 3]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [3]),
        ]
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["mm"]),
        helper.make_node("Add", ["mm", "b"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["activated"], axis=1),
    ]
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["n", 3]) for name in order]
    initializers = [numpy_helper.from_array(WEIGHTS, "W"), numpy_helper.from_array(BIAS, "b")]
    graph = helper.make_graph(nodes, "two", inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.mark.kernels
@pytest.mark.parametrize("order", [("scores", "activated"), ("activated", "scores")])
def test_logits_beside_their_softmax_are_the_ones_audited(
    tmp_path: Path, order: tuple[str, str]
) -> None:
    path = _graph(tmp_path / "two.onnx", order=order)
    features = RNG.normal(size=(9, 4))
    scores = features.astype(np.float32) @ WEIGHTS + BIAS
    model = OnnxLoader().load(path)
    # the graph's own float32 scores, returned as float64 without a round trip through
    # probabilities: onnxruntime's float32 MatMul against numpy's, two evaluations
    tolerance = network_tolerance([(WEIGHTS, BIAS)], features.astype(np.float32))
    np.testing.assert_array_less(np.abs(model.predict(features) - scores), tolerance)
    assert model.output_kind == "logits"
    assert model.output_reading.reason == (
        "the graph's output 'scores', whose activation is its other output 'activated'"
    )
    probabilities = OnnxLoader().load(path, outputs="probabilities")
    expected = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    tolerance = probability_tolerance(tolerance, expected, rounded=1)  # the graph's softmax
    np.testing.assert_array_less(np.abs(probabilities.predict(features) - expected), tolerance)


def test_constants_listed_as_inputs_are_not_data_columns(tmp_path: Path) -> None:
    path = _graph(tmp_path / "consts.onnx", order=("scores", "activated"), constants_as_inputs=True)
    model = OnnxLoader().load(path)
    assert model.n_features == 4  # not 4 + 12 + 3
    features = RNG.normal(size=(5, 4))
    expected = features.astype(np.float32) @ WEIGHTS + BIAS
    tolerance = network_tolerance([(WEIGHTS, BIAS)], features.astype(np.float32))
    np.testing.assert_array_less(np.abs(model.predict(features) - expected), tolerance)
