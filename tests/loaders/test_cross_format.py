"""The same weights in skops, ONNX and TorchScript give the same predictions and ε*.

The skops models compute in float64; most ONNX and TorchScript files in float32
(``multiclass_logreg`` is float64 in all three). A float32 file's predictions, losses and
ε* are compared with the float64 ones within the tolerances their arithmetic allows
(``tests/numerics.py``: the float32 rounding of features, weights and sums through the
network's layers, carried to the losses and, by shifting the losses within them, to ε*).
The empirical ε* depends only on how the training losses rank among the population
losses, so it sits on a knife's edge: it is compared by its value within that propagated
tolerance, not by which record attains it.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import epsstar
from epsstar.audit.model.plugins import loader_for_path
from tests.fixture_twins import twin_layers
from tests.numerics import (
    logit_loss_tolerance,
    loss_tolerance,
    module_tolerance,
    network_tolerance,
    probability_tolerance,
    propagated,
)

pytestmark = pytest.mark.kernels

MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "models"


@cache
def table(task: str, part: str) -> tuple[np.ndarray, np.ndarray]:
    """Features (float64) and labels of one split of the fixture data."""
    frame = pd.read_parquet(MODELS / f"{task}_{part}.parquet")
    return frame[[f"x{i}" for i in range(8)]].to_numpy(dtype=np.float64), frame["label"].to_numpy()


DELTA = 1e-3


def probabilities(fixture_model: Any, features: np.ndarray) -> np.ndarray:
    model = loader_for_path(fixture_model.path)[0].load(fixture_model.path)
    output = model.predict(features)
    assert model.output_kind == fixture_model.output_kind
    if model.output_kind == "probabilities":
        return output
    if output.ndim == 1:
        return 1.0 / (1.0 + np.exp(-output))
    shifted = np.exp(output - output.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def class_indices(fixture_model: Any, labels: np.ndarray) -> np.ndarray:
    return np.searchsorted(np.asarray(fixture_model.classes), labels)


def empirical_epsilon(train: np.ndarray, population: np.ndarray) -> float:
    return float(epsstar.epsilon_star(train, population, delta=DELTA, method="empirical").epsilon)


def prediction_tolerance(fixture_model: Any, features: np.ndarray, expected: np.ndarray) -> Any:
    """How far a file's probabilities may lie from the float64 twin's ``expected``: float64
    formats to rounding, float32 ones as their arithmetic allows."""
    layers = twin_layers(fixture_model.path)
    if fixture_model.input_dtype == "float64" or layers is None:
        return 1e-12
    logits = network_tolerance(layers, features, against_float64=True)
    rounded = int(fixture_model.output_kind == "probabilities")  # the file's own sigmoid/softmax
    return probability_tolerance(logits, expected, rounded=rounded)


def losses_tolerance(fixture_model: Any, part: str) -> Any:
    """Per record, how far a file's losses on ``part`` may lie from its float64 twin's."""
    layers = twin_layers(fixture_model.path)
    if fixture_model.input_dtype == "float64" or layers is None:
        return 1e-12
    features, _ = table(fixture_model.task, part)
    logits = network_tolerance(layers, features, against_float64=True)
    predictions = loaded(fixture_model).predict(features)
    return loss_tolerance(logits, predictions, fixture_model.output_kind, evaluations=1)


@cache
def loaded(fixture_model: Any) -> Any:
    return loader_for_path(fixture_model.path)[0].load(fixture_model.path)


@pytest.mark.parametrize(
    "stem", ["binary_logreg", "binary_mlp", "multiclass_logreg", "multiclass_mlp"]
)
def test_formats_agree(stem: str, all_models: tuple[Any, ...]) -> None:
    same = [f for f in all_models if f.file.split(".")[0] in (stem, f"{stem}_torch")]
    assert {f.format for f in same} == {"skops", "onnx", "torchscript"}
    reference = next(f for f in same if f.format == "skops")
    features, _ = table(reference.task, "population")
    expected = probabilities(reference, features)
    reference_losses = {part: losses_of(reference, part) for part in ("train", "population")}
    reference_epsilon = empirical_epsilon(*reference_losses.values())
    assert reference_epsilon > 0.0
    for fixture_model in same:
        tolerance = prediction_tolerance(fixture_model, features, expected)
        found = np.abs(probabilities(fixture_model, features) - expected)
        assert np.all(found <= tolerance), (fixture_model.file, np.max(found - tolerance))
        moved = propagated(
            empirical_epsilon,
            reference_losses["train"],
            reference_losses["population"],
            *(losses_tolerance(fixture_model, part) for part in reference_losses),
        )
        got = empirical_epsilon(*(losses_of(fixture_model, part) for part in reference_losses))
        assert abs(got - reference_epsilon) <= moved + 1e-12, (fixture_model.file, moved)


@pytest.mark.models(task="multiclass")
def test_string_labels_follow_the_model_classes(fixture_model: Any) -> None:
    model = loader_for_path(fixture_model.path)[0].load(fixture_model.path)
    if fixture_model.format == "torchscript" or fixture_model.producer == "torch.onnx":
        assert model.classes is None
    else:
        assert model.classes == ("a", "b", "c", "d")
    features, labels = table("multiclass", "train")
    predicted = np.asarray(fixture_model.classes)[np.argmax(model.predict(features), axis=1)]
    assert np.mean(predicted == labels) > 0.5


def losses_of(fixture_model: Any, part: str) -> np.ndarray:
    """The per-record logit losses of one format on one split, as the audit computes them."""
    model = loader_for_path(fixture_model.path)[0].load(fixture_model.path)
    features, labels = table(fixture_model.task, part)
    predictions = model.predict(features)
    return epsstar.compute_losses(
        class_indices(fixture_model, labels), predictions, outputs=model.output_kind
    )


@pytest.mark.parametrize("stem", ["binary_logreg", "multiclass_logreg", "multiclass_mlp"])
def test_exact_losses_agree_across_formats_and_do_not_saturate(
    stem: str, all_models: tuple[Any, ...]
) -> None:
    """skops computes in float64, ONNX and TorchScript mostly in float32; from logits (exposed
    from the graph, decision_function, or the module's own output) the losses agree within
    their derived tolerance, never sit at the ±36.04 clip, and the headline Epsilon* of each
    format is within its propagated tolerance of the float64 one."""
    from epsstar.statistics.losses import MAX_ABS_LOGIT

    same = [f for f in all_models if f.file.split(".")[0] in (stem, f"{stem}_torch")]
    reference = next(f for f in same if f.format == "skops")
    expected = {part: losses_of(reference, part) for part in ("train", "population")}
    n = expected["train"].size
    delta = 1.0 / (n * np.log(n))  # the audit's default
    headline = epsstar.epsilon_star(
        expected["train"], expected["population"], delta=delta, seed=0
    ).epsilon
    for fixture_model in same:
        tolerance = {part: losses_tolerance(fixture_model, part) for part in expected}
        got = {part: losses_of(fixture_model, part) for part in ("train", "population")}
        for part in got:
            found = np.abs(got[part] - expected[part])
            assert np.all(found <= tolerance[part]), (fixture_model.file, part)
            assert not np.any(np.isclose(np.abs(got[part]), MAX_ABS_LOGIT, rtol=1e-9))
        value = epsstar.epsilon_star(got["train"], got["population"], delta=delta, seed=0).epsilon
        moved = propagated(
            lambda train, population: (
                epsstar.epsilon_star(train, population, delta=delta, seed=0).epsilon
            ),
            expected["train"],
            expected["population"],
            tolerance["train"],
            tolerance["population"],
        )
        assert abs(value - headline) <= moved + 1e-12, (fixture_model.file, moved)


def test_the_digits_cnn_gives_the_same_exact_losses_as_torchscript_and_onnx() -> None:
    """digits_cnn.onnx is torch.onnx's export of the network in digits_cnn.pt."""
    import torch

    kinds = MODELS / "kinds"
    data = np.load(kinds / "digits_population.npz")
    losses = []
    for name in ("digits_cnn.pt", "digits_cnn.onnx"):
        model = loader_for_path(kinds / name)[0].load(kinds / name)
        predictions = model.predict(data["X"])
        assert model.output_kind == "logits"
        losses.append(epsstar.compute_losses(data["y"], predictions, outputs="logits"))
    # torch's and onnxruntime's float32 convolutions round differently (1.5e-6 apart at
    # worst here); a network trained one epoch more differs by 0.6
    network = torch.jit.load(kinds / "digits_cnn.pt")
    tolerance = logit_loss_tolerance(module_tolerance(network, data["X"]))
    np.testing.assert_array_less(np.abs(losses[1] - losses[0]), tolerance)
