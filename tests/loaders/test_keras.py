"""Keras 3 ``.keras`` files, built with Keras on the torch backend: exact logits before the
final softmax, the contract suite, Epsilon* within 0.02 of Keras' own ONNX export, and
Keras' safe mode (a lambda needs --trust-model)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import epsstar.audit.model.contract
from epsstar.audit.model import plugins
from epsstar.exceptions import InputFileError, InvalidInputError
from tests.conftest import audit_files
from tests.numerics import network_tolerance, probability_tolerance

os.environ.setdefault("KERAS_BACKEND", "torch")
keras = pytest.importorskip("keras")
pytest.importorskip("onnxruntime")
pytest.importorskip("torch")
if keras.backend.backend() != "torch":  # pragma: no cover - another backend chosen first
    pytest.skip("these tests build models on Keras' torch backend", allow_module_level=True)

from epsstar.loaders.native.keras_files import KerasLoader  # noqa: E402

NAMES = [f"x{j}" for j in range(6)]


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """An MLP ending in a softmax, fitted to memorise 150 noisy records; saved with
    ``model.save`` and ``model.export(format="onnx")``."""
    folder = tmp_path_factory.mktemp("keras")
    generator = np.random.default_rng(5)
    features = generator.normal(size=(300, 6)).astype(np.float32)
    labels = (features[:, 0] + generator.normal(scale=2.0, size=300) > 0).astype(np.int64)
    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.Input((6,)),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(2, activation="softmax"),
    ])  # fmt: skip
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
    model.fit(features[:150], labels[:150], epochs=150, batch_size=150, verbose=0)
    paths = {"keras": folder / "mlp.keras", "onnx": folder / "mlp.onnx"}
    model.save(paths["keras"])
    model.export(str(paths["onnx"]), format="onnx", verbose=False)
    for role, rows in (("train", slice(0, 150)), ("population", slice(150, 300))):
        paths[role] = folder / f"{role}.csv"
        frame = pd.DataFrame(features[rows], columns=NAMES).assign(label=labels[rows])
        frame.to_csv(paths[role], index=False)
    return {"paths": paths, "model": model, "features": features}


@pytest.mark.kernels
def test_the_scores_before_the_softmax_are_the_logits(saved: dict[str, Any]) -> None:
    loaded = KerasLoader().load(saved["paths"]["keras"])
    assert loaded.n_features == 6
    reading = loaded.output_reading
    assert reading is not None
    assert reading.kind == "logits"
    assert reading.reason.startswith("the scores before the final softmax of Dense layer")
    features = saved["features"][:40]
    logits = loaded.predict(features)
    probabilities = saved["model"].predict(features, verbose=0)
    softmax = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    # another float32 evaluation of the network: the scores within their derived tolerance,
    # and the model's own float32 softmax rounded once more
    weights = saved["model"].get_weights()
    scores = network_tolerance(list(zip(weights[::2], weights[1::2], strict=True)), features)
    tolerance = probability_tolerance(scores, probabilities, rounded=1)
    np.testing.assert_array_less(np.abs(softmax - probabilities), tolerance)
    kept = KerasLoader().load(saved["paths"]["keras"], outputs="probabilities")
    tolerance = probability_tolerance(scores, probabilities, rounded=2)
    np.testing.assert_array_less(np.abs(kept.predict(features) - probabilities), tolerance)


@pytest.mark.kernels
def test_the_loader_keeps_the_contract(saved: dict[str, Any]) -> None:
    features = saved["features"][:40].astype(np.float64)
    weights = saved["model"].get_weights()
    layers = list(zip(weights[::2], weights[1::2], strict=True))
    # a row alone or in chunks is another float32 evaluation of the same network
    tolerance = float(network_tolerance(layers, features).max())
    epsstar.audit.model.contract.check_loader(
        KerasLoader(), saved["paths"]["keras"], features, rtol=0, atol=tolerance
    )


@pytest.fixture
def registered() -> Iterator[None]:
    """The loader under its entry-point name (an editable install made before the entry
    point was declared does not list it yet)."""
    added = "keras" not in plugins.available_loaders()
    if added:
        plugins.register_loader("keras", KerasLoader)
    yield
    if added:
        plugins._reset()


def test_epsilon_star_agrees_with_the_onnx_export(saved: dict[str, Any], registered: None) -> None:
    paths = saved["paths"]
    results = [
        audit_files(paths[kind], paths["train"], paths["population"], "label", seed=3,
                    features=NAMES)
        for kind in ("keras", "onnx")
    ]  # fmt: skip
    assert results[0].epsilon.epsilon > 0.5  # the network memorised its records
    assert abs(results[0].epsilon.epsilon - results[1].epsilon.epsilon) < 0.02
    assert results[0].provenance.loader.name == "keras"


def test_a_lambda_needs_trust_and_garbage_is_refused(tmp_path: Path) -> None:
    model = keras.Sequential([
        keras.Input((3,)),
        keras.layers.Lambda(lambda v: v * 2.0),
        keras.layers.Dense(2, activation="softmax"),
    ])  # fmt: skip
    path = tmp_path / "lambda.keras"
    model.save(path)
    with pytest.raises(InvalidInputError, match=r"--trust-model.*Found a Python lambda\.$"):
        KerasLoader().load(path)
    trusted = KerasLoader().load(path, trust=True)
    assert trusted.predict(np.ones((4, 3))).shape == (4, 2)
    (tmp_path / "junk.keras").write_bytes(b"not a zip" * 10)
    with pytest.raises(
        InputFileError,
        match=r"must be a Keras model saved with model\.save \(\.keras, or the legacy \.h5\)",
    ):
        KerasLoader().load(tmp_path / "junk.keras")
