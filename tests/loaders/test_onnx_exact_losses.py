"""Exact losses from ONNX classifiers: the scores before the final activation, in float64."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import onnx
import pandas as pd
import pytest
import torch
from onnx import TensorProto, helper
from scipy.special import expit, softmax

from epsstar.audit.model.features import Features
from epsstar.loaders.onnx import OnnxLoader
from epsstar.loaders.onnx.graph import logits_matching
from epsstar.statistics.losses import compute_losses
from tests.numerics import (
    estimator_layers,
    logit_loss_tolerance,
    module_layers,
    network_tolerance,
    probability_tolerance,
)

ROOT = Path(__file__).resolve().parents[2]
KINDS = ROOT / "fixtures" / "models" / "kinds"
SATURATION = 36.0  # log((1 - ε) / ε) for ε = 2.2e-16 is 36.04


@pytest.fixture(scope="module")
def adult(fixture_builder: Callable[[str], ModuleType]) -> tuple[Any, pd.DataFrame, np.ndarray]:
    """sklearn's pipeline refitted as the fixture builder fits it, the population, labels."""
    frame = pd.read_csv(KINDS / "adult_population.csv")
    train = pd.read_csv(KINDS / "adult_train.csv")
    for table in (frame, train):
        for name in table.select_dtypes(exclude="number").columns:
            table[name] = table[name].astype(object)
    pipeline = fixture_builder("onnx_models").adult_pipeline(train)
    features = frame.drop(columns="income")
    labels = np.searchsorted(pipeline.classes_, frame["income"].to_numpy())
    return pipeline, features, labels


def adult_features(frame: pd.DataFrame) -> Features:
    """The columns as the audit hands them to the model: typed, named like its inputs."""
    renamed = frame.rename(columns=lambda name: name.replace("-", "_"))
    return Features.from_frame(renamed)


def test_the_adult_pipeline_predicts_as_sklearn_does(
    adult: tuple[Any, pd.DataFrame, np.ndarray],
) -> None:
    pipeline, features, _ = adult
    path = KINDS / "adult_pipeline_columns.onnx"
    model = OnnxLoader().load(path, outputs="probabilities")
    assert model.feature_names is not None
    assert "education_num" in model.feature_names
    assert len(model.feature_names) == 14
    assert model.classes == tuple(pipeline.classes_)
    expected = pipeline.predict_proba(features)[:, 1]
    # a float32 graph against a float64 refit: 1.8e-7 apart (the refit's own drift, ~1e-7
    # relative in the log-odds, adds less); a stale fixture or a column given to the wrong
    # input moves probabilities by more than 1e-2
    np.testing.assert_allclose(model.predict(adult_features(features)), expected, atol=1e-5)


def test_the_adult_pipelines_losses_are_exact(
    adult: tuple[Any, pd.DataFrame, np.ndarray],
) -> None:
    pipeline, features, labels = adult
    model = OnnxLoader().load(KINDS / "adult_pipeline_columns.onnx")
    assert model.output_kind == "logits"
    assert model.output_reading is not None
    assert model.output_reading.source == "loader"
    logits = model.predict(adult_features(features))
    assert logits.dtype == np.float64
    expected = compute_losses(labels, pipeline.decision_function(features), outputs="logits")
    losses = compute_losses(labels, logits, outputs="logits")
    # float32 log-odds up to 26 against a float64 refit: 3e-6 apart, within 1e-5 relative
    # (30 times the float32 rounding near 0); the refit's drift is ~1e-7 relative
    np.testing.assert_allclose(losses, expected, rtol=1e-5, atol=1e-5)
    assert np.abs(losses).max() < SATURATION
    # the float32 probabilities saturate: the reason for exposing the scores
    rounded = OnnxLoader().load(KINDS / "adult_pipeline_columns.onnx", outputs="probabilities")
    clipped = compute_losses(labels, rounded.predict(adult_features(features)))
    assert np.abs(clipped).max() > SATURATION
    assert np.abs(expected).max() > SATURATION - 10  # the data do reach that far


def _torch_onnx(path: Path, network: torch.nn.Module, names: list[str]) -> Path:
    torch.onnx.export(
        network.eval(), (torch.zeros(2, 3),), str(path), input_names=["x"], output_names=names,
        dynamic_axes={"x": {0: "n"}, **{n: {0: "n"} for n in names}}, dynamo=False,
    )  # fmt: skip
    return path


class TwoHeads(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(3, 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = self.linear(x)
        return torch.softmax(z, dim=1), z


def _scaled_linear(out: int, scale: float = 80.0) -> torch.nn.Linear:
    torch.manual_seed(0)
    linear = torch.nn.Linear(3, out)
    with torch.no_grad():
        linear.weight.mul_(scale)
    return linear


@pytest.mark.kernels
@pytest.mark.parametrize("activation", ["softmax", "sigmoid", "log_softmax"])
def test_torch_networks_give_their_pre_activation_scores(tmp_path: Path, activation: str) -> None:
    width = 1 if activation == "sigmoid" else 4
    linear = _scaled_linear(width)
    tail = {
        "softmax": torch.nn.Softmax(dim=1),
        "sigmoid": torch.nn.Sigmoid(),
        "log_softmax": torch.nn.LogSoftmax(dim=1),
    }[activation]
    network = torch.nn.Sequential(linear, tail)
    model = OnnxLoader().load(_torch_onnx(tmp_path / "m.onnx", network, ["probabilities"]))
    x = np.random.default_rng(0).normal(size=(50, 3))
    scores = linear(torch.as_tensor(x, dtype=torch.float32)).detach().numpy().astype(np.float64)
    assert model.output_kind == "logits"
    logits = model.predict(x)
    if activation == "log_softmax":  # log-probabilities are logits already
        np.testing.assert_allclose(softmax(logits, axis=1), softmax(scores, axis=1), atol=1e-6)
    else:
        # torch and onnxruntime each compute the 3-term dot product plus bias in float32:
        # two evaluations, within their derived tolerance (scores up to 95 here; one float32
        # unit in the last place apart, 7.6e-6, seen)
        tolerance = network_tolerance(module_layers([linear]), x)
        gap = np.abs(logits - scores.reshape(logits.shape))
        assert np.all(gap <= tolerance.reshape(logits.shape))
    assert np.abs(scores).max() > 40  # far beyond where float32 probabilities round to 1
    labels = np.zeros(50, dtype=np.int64)
    assert np.abs(compute_losses(labels, logits, outputs="logits")).max() > SATURATION


def test_an_output_named_logits_is_preferred_and_probabilities_stay_available(
    tmp_path: Path,
) -> None:
    path = _torch_onnx(tmp_path / "two.onnx", TwoHeads(), ["probabilities", "logits"])
    x = np.random.default_rng(1).normal(size=(10, 3))
    model = OnnxLoader().load(path)
    assert model.output_kind == "logits"
    assert model.output_reading is not None
    assert "'logits'" in model.output_reading.reason
    probabilities = OnnxLoader().load(path, outputs="probabilities")
    assert probabilities.output_kind == "probabilities"
    np.testing.assert_allclose(
        softmax(model.predict(x), axis=1), probabilities.predict(x), atol=1e-6
    )


def test_scores_that_do_not_reproduce_the_probabilities_are_not_used(tmp_path: Path) -> None:
    """A Softmax over the batch axis is not a softmax over classes: the output is kept."""
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["z"]),
        helper.make_node("Softmax", ["z"], ["p"], axis=0),
    ]
    w = onnx.numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(3, 2) - 2.5, "w")
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3])],
        [helper.make_tensor_value_info("p", TensorProto.FLOAT, [None, 2])], [w],
    )  # fmt: skip
    path = tmp_path / "batch_softmax.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    model = OnnxLoader().load(path, outputs=None)
    reading = model.output_reading
    assert reading is not None
    assert reading.source == "detected"
    assert "output 'p' is used as it is: the scores before its final Softmax did not" in (
        reading.reason
    )
    x = np.random.default_rng(2).normal(size=(5, 3)).astype(np.float32)
    z = x @ onnx.numpy_helper.to_array(w)
    np.testing.assert_allclose(model.predict(x), softmax(z, axis=0), atol=1e-6)


def test_logits_matching_accepts_only_scores_that_reproduce_the_probabilities() -> None:
    z = np.array([[0.0, 50.0, -3.0], [2.0, 2.0, 1.0]])
    p = softmax(z, axis=1).astype(np.float32)
    np.testing.assert_array_equal(logits_matching(z, p), z)
    assert logits_matching(z + np.array([[0.0], [1.0]]), p) is not None  # shift-invariant
    assert logits_matching(2 * z, p) is None
    log_odds = np.array([-40.0, 0.5, 40.0])
    two = np.stack([1 - expit(log_odds), expit(log_odds)], axis=1)
    np.testing.assert_array_equal(logits_matching(log_odds, two), log_odds)
    np.testing.assert_array_equal(logits_matching(log_odds[:, None], expit(log_odds)), log_odds)
    assert logits_matching(log_odds, expit(-log_odds)) is None
    assert logits_matching(np.array([np.inf, 0.0, 1.0]), expit(log_odds)) is None


def _skl2onnx_logreg(path: Path, zipmap: bool, classes: int) -> tuple[Any, np.ndarray]:
    from skl2onnx import to_onnx
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(3)
    x = rng.normal(size=(300, 3)).astype(np.float32)
    y = (x @ np.array([3.0, -2.0, 1.0]) * 4).astype(int) % classes
    estimator = LogisticRegression(max_iter=1000, C=100.0).fit(x, y)
    onx = to_onnx(estimator, x[:1], options={"zipmap": zipmap}, target_opset=17)
    path.write_bytes(onx.SerializeToString())
    return estimator, x


@pytest.mark.kernels
@pytest.mark.parametrize("classes", [2, 3])
def test_zipmap_classifiers_give_exact_losses(tmp_path: Path, classes: int) -> None:
    estimator, x = _skl2onnx_logreg(tmp_path / "lr.onnx", zipmap=True, classes=classes)
    model = OnnxLoader().load(tmp_path / "lr.onnx")
    assert model.output_kind == "logits"
    labels = np.searchsorted(estimator.classes_, estimator.predict(x))
    expected = compute_losses(labels, estimator.decision_function(x), outputs="logits")
    losses = compute_losses(labels, model.predict(x), outputs="logits")
    # the float32 graph against the float64 estimator, within their derived tolerance
    scores = network_tolerance(estimator_layers(estimator), x, against_float64=True)
    np.testing.assert_array_less(np.abs(losses - expected), logit_loss_tolerance(scores))
    probabilities = OnnxLoader().load(tmp_path / "lr.onnx", outputs="probabilities").predict(x)
    wanted = estimator.predict_proba(x)
    wanted = wanted[:, 1] if classes == 2 else wanted
    tolerance = probability_tolerance(scores, wanted, rounded=1)
    np.testing.assert_array_less(np.abs(probabilities - wanted), tolerance)


@pytest.mark.kernels
def test_a_probability_tensor_is_preferred_to_zipmap(tmp_path: Path) -> None:
    estimator, x = _skl2onnx_logreg(tmp_path / "lr.onnx", zipmap=True, classes=3)
    proto = onnx.load(str(tmp_path / "lr.onnx"))
    zipmap = next(node for node in proto.graph.node if node.op_type == "ZipMap")
    tensor = zipmap.input[0]
    proto.graph.output.append(helper.make_tensor_value_info(tensor, TensorProto.FLOAT, None))
    onnx.save(proto, str(tmp_path / "both.onnx"))
    model = OnnxLoader().load(tmp_path / "both.onnx", outputs="probabilities")
    assert model._output_name == tensor
    wanted = estimator.predict_proba(x)
    scores = network_tolerance(estimator_layers(estimator), x, against_float64=True)
    tolerance = probability_tolerance(scores, wanted, rounded=1)
    np.testing.assert_array_less(np.abs(model.predict(x) - wanted), tolerance)
