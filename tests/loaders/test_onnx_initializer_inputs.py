"""ONNX graphs that list their initializers among the graph inputs (tf2onnx, IR < 4)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from epsstar.audit.model.features import Features
from epsstar.loaders.onnx import OnnxLoader, feature_inputs
from tests.numerics import network_tolerance

WIDTH = 30
WEIGHTS = np.random.default_rng(0).standard_normal((WIDTH, 2)).astype(np.float32)
BIAS = np.array([0.25, -0.5], dtype=np.float32)


def graph(path: Path, *, ir_version: int) -> Path:
    """``logits = input @ W + b``, with ``W`` and ``b`` initializers also listed as inputs."""
    listed = [
        helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", WIDTH]),
        helper.make_tensor_value_info("W", TensorProto.FLOAT, [WIDTH, 2]),
        helper.make_tensor_value_info("b", TensorProto.FLOAT, [2]),
    ]
    body = helper.make_graph(
        [helper.make_node("Gemm", ["input", "W", "b"], ["logits"])],
        "constants_as_inputs",
        listed,
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 2])],
        [numpy_helper.from_array(WEIGHTS, "W"), numpy_helper.from_array(BIAS, "b")],
    )
    model = helper.make_model(
        body, opset_imports=[helper.make_opsetid("", 11)], ir_version=ir_version
    )
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


@pytest.mark.parametrize("ir_version", [3, 7])
def test_only_the_record_input_counts(tmp_path: Path, ir_version: int) -> None:
    model = OnnxLoader().load(graph(tmp_path / "listed.onnx", ir_version=ir_version))
    assert model.n_features == WIDTH  # not 30 + 2 + 1 columns for W and b
    rows = np.random.default_rng(1).standard_normal((5, WIDTH)).astype(np.float32)
    logits = rows.astype(np.float64) @ WEIGHTS + BIAS
    # float32 arithmetic in the runtime against float64 here on the same float32 rows and
    # weights: one evaluation's error, half of two evaluations' tolerance
    tolerance = network_tolerance([(WEIGHTS, BIAS)], rows) / 2
    found = np.abs(model.predict(Features.from_matrix(rows)) - logits)
    np.testing.assert_array_less(found, tolerance)


def test_initializers_are_left_out_whatever_the_runtime_reports(tmp_path: Path) -> None:
    """A runtime that reports every listed input (as older ones did) still gets one input."""
    proto = onnx.load(graph(tmp_path / "listed.onnx", ir_version=3))
    reported = [SimpleNamespace(name=node.name) for node in proto.graph.input]
    assert [node.name for node in feature_inputs(reported, proto)] == ["input"]
