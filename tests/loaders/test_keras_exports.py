"""Keras networks saved as people save them outside ``.keras``: the legacy ``.h5`` file, a
TensorFlow SavedModel folder, and the ONNX graph tf2onnx writes for one.

The networks are built with Keras on the torch backend. TensorFlow is not a dependency,
so the two forms only TensorFlow writes are reproduced: the SavedModel folder as its files
lie on disk (refused with the command that converts it, so its content is never read), and
tf2onnx's graph with :mod:`onnx.helper`, node for node as tf2onnx 1.17 writes it for a
``Sequential`` of two ``Dense`` layers (checked against a real export from a SavedModel:
an input named ``keras_tensor`` of shape ``[unk__6, 30]``, ``MatMul``/``Add``/``Relu``/
``MatMul``/``Add``/``Softmax``, the weights named after their TensorFlow reads and, at
opset 8, listed among the graph's inputs too). Epsilon* must be within
:data:`~tests.loaders.test_converted_models.AGREEMENT` of the Epsilon* of Keras' own
``predict`` on the same records.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.loaders.test_converted_models import (
    WIDTH,
    assert_agrees,
    audit,
    features_of,
    own_epsilon,
    refused,
    tables,
)

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")
pytest.importorskip("h5py")
if keras.backend.backend() != "torch":  # pragma: no cover - another backend chosen first
    pytest.skip("these tests build models on Keras' torch backend", allow_module_level=True)

#: Where tf2onnx reads each Dense layer's kernel and bias (the SavedModel's variable reads).
KERNEL = "StatefulPartitionedCall/sequential_1/{layer}/Cast/ReadVariableOp:0"
BIAS = "StatefulPartitionedCall/sequential_1/{layer}/BiasAdd/ReadVariableOp:0"


def network(train: Any) -> Any:
    """A two-layer network ending in a softmax, fitted until it knows its training records."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.Input((WIDTH,)),
        keras.layers.Dense(16, activation="relu"),
        keras.layers.Dense(2, activation="softmax"),
    ])  # fmt: skip
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
    features = features_of(train).to_numpy(np.float32)
    model.fit(features, train["label"].to_numpy(), epochs=60, batch_size=50, verbose=0)
    return model


def keras_epsilon(model: Any, train: Any, population: Any, delta: float) -> float:
    """Epsilon* of Keras' own probabilities."""
    probabilities = tuple(
        np.asarray(model.predict(features_of(f).to_numpy(np.float32), verbose=0), np.float64)
        for f in (train, population)
    )
    labels = (train["label"].to_numpy(), population["label"].to_numpy())
    return own_epsilon(probabilities, labels, delta)


def test_a_legacy_h5_file_is_audited(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    train, population, train_csv, population_csv = tables(tmp_path)
    model = network(train)
    path = tmp_path / "network.h5"
    model.save(path)
    document = audit(path, train_csv, population_csv, capsys)
    # Refused before: "the model file's suffix must match a loader ... Found 'network.h5'".
    assert document["provenance"]["loader"]["name"] == "keras"
    assert document["output_reading"]["kind"] == "logits"  # the scores before the softmax
    assert_agrees(document, keras_epsilon(model, train, population, document["delta"]))


def test_a_lambda_in_an_h5_file_needs_trust(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, train_csv, population_csv = tables(tmp_path)
    model = keras.Sequential([
        keras.Input((WIDTH,)),
        keras.layers.Lambda(lambda x: x * 2.0),
        keras.layers.Dense(2, activation="softmax"),
    ])  # fmt: skip
    model.save(tmp_path / "lambda.h5")
    argv = ["audit", str(tmp_path / "lambda.h5"), "--train", str(train_csv)]
    argv += ["--population", str(population_csv), "--label-column", "label", "--quiet"]
    line = refused(argv, capsys)
    assert "must hold no Python code to be loaded without --trust-model" in line


def test_a_savedmodel_folder_is_refused_with_its_conversion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, _, train_csv, population_csv = tables(tmp_path)
    folder = tmp_path / "saved model"
    (folder / "variables").mkdir(parents=True)
    for name in ("saved_model.pb", "fingerprint.pb", "variables/variables.index"):
        (folder / name).write_bytes(b"\x08\x01")  # never read: the folder is refused first
    argv = ["audit", str(folder), "--train", str(train_csv), "--population", str(population_csv)]
    line = refused([*argv, "--label-column", "label", "--quiet"], capsys)
    command = f"python -m tf2onnx.convert --saved-model '{folder}' --output '{folder}.onnx'"
    assert command in line
    assert line.startswith("epsstar audit: error: the TensorFlow SavedModel folder must be")


def tf2onnx_graph(model: Any, *, opset: int) -> Any:
    """The graph tf2onnx writes for ``model`` (see the module docstring)."""
    from onnx import TensorProto, helper, numpy_helper

    (kernel1, bias1), (kernel2, bias2) = (layer.get_weights() for layer in model.layers)
    names = {
        "k1": KERNEL.format(layer="dense_1"),
        "b1": BIAS.format(layer="dense_1"),
        "k2": KERNEL.format(layer="dense_1_2"),
        "b2": BIAS.format(layer="dense_1_2"),
    }
    weights = {"k1": kernel1, "b1": bias1, "k2": kernel2, "b2": bias2}
    step = "StatefulPartitionedCall/sequential_1/{layer}/{op}:0"
    hidden, last = "dense_1", "dense_1_2"
    nodes = [
        helper.make_node(
            "MatMul", ["keras_tensor", names["k1"]], [step.format(layer=hidden, op="MatMul")]
        ),
        helper.make_node(
            "Add",
            [step.format(layer=hidden, op="MatMul"), names["b1"]],
            [step.format(layer=hidden, op="BiasAdd")],
        ),
        helper.make_node(
            "Relu",
            [step.format(layer=hidden, op="BiasAdd")],
            [step.format(layer=hidden, op="Relu")],
        ),
        helper.make_node(
            "MatMul",
            [step.format(layer=hidden, op="Relu"), names["k2"]],
            [step.format(layer=last, op="MatMul")],
        ),
        helper.make_node(
            "Add",
            [step.format(layer=last, op="MatMul"), names["b2"]],
            [step.format(layer=last, op="BiasAdd")],
        ),
        helper.make_node("Softmax", [step.format(layer=last, op="BiasAdd")], ["output_0"], axis=1),
    ]
    inputs = [helper.make_tensor_value_info("keras_tensor", TensorProto.FLOAT, ["unk__6", WIDTH])]
    if opset < 9:  # tf2onnx lists the weights among the inputs at these opsets
        inputs += [
            helper.make_tensor_value_info(names[key], TensorProto.FLOAT, weights[key].shape)
            for key in ("k2", "b2", "k1", "b1")
        ]
    graph = helper.make_graph(
        nodes,
        "tf2onnx",
        inputs,
        [helper.make_tensor_value_info("output_0", TensorProto.FLOAT, ["unk__7", 2])],
        [numpy_helper.from_array(weights[key], names[key]) for key in ("k2", "b2", "k1", "b1")],
    )
    opsets = [helper.make_opsetid("", opset), helper.make_opsetid("ai.onnx.ml", 2)]
    proto = helper.make_model(graph, opset_imports=opsets, producer_name="tf2onnx")
    proto.producer_version = "1.17.0 ba5c7c5"
    proto.ir_version = 4 if opset < 10 else 7
    return proto


@pytest.mark.parametrize("opset", [8, 13])
def test_a_tf2onnx_graph_takes_its_declared_width(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], opset: int
) -> None:
    import onnx

    train, population, train_csv, population_csv = tables(tmp_path)
    model = network(train)
    proto = tf2onnx_graph(model, opset=opset)
    onnx.checker.check_model(proto)
    path = tmp_path / "network.onnx"
    onnx.save(proto, path)
    document = audit(path, train_csv, population_csv, capsys)
    assert document["columns_from"] == "position"
    assert len(document["provenance"]["columns"]) == WIDTH
    assert_agrees(document, keras_epsilon(model, train, population, document["delta"]))
