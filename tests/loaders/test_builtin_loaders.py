"""Behaviour of the three built-in loaders beyond the shared contract."""

from __future__ import annotations

import pickle
from functools import cache
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pandas as pd
import pytest
import skops.io as sio
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.svm import LinearSVC

from epsstar.audit.data.reading import TableRead
from epsstar.audit.engines.streaming import stream_table
from epsstar.audit.model.class_labels import FEATURES_KEY, features_to_text
from epsstar.audit.model.plugins import loader_for_path
from epsstar.exceptions import InputFileError, InsufficientDataError, InvalidInputError
from epsstar.loaders import looks_like_probabilities, probe_features
from epsstar.loaders.onnx import OnnxLoader
from epsstar.loaders.sklearn import SklearnLoader
from epsstar.loaders.torchscript import TorchScriptLoader
from tests.fixture_twins import twin_layers
from tests.numerics import module_layers, network_tolerance, probability_tolerance

MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "models"
FEATURES = [f"x{i}" for i in range(8)]


@cache
def table(task: str, part: str) -> tuple[np.ndarray, np.ndarray]:
    """Features (float64) and labels of one split of the fixture data."""
    frame = pd.read_parquet(MODELS / f"{task}_{part}.parquet")
    return frame[[f"x{i}" for i in range(8)]].to_numpy(dtype=np.float64), frame["label"].to_numpy()


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def load(path: Path, **options: Any) -> Any:
    return loader_for_path(path)[0].load(path, **options)


def save_script(module: torch.nn.Module, path: Path) -> Path:
    torch.jit.save(torch.jit.script(module.eval()), str(path))
    return path


# ----------------------------------------------------------------- detection


@pytest.mark.models
def test_output_kind_is_detected(fixture_model: Any) -> None:
    model = load(fixture_model.path)
    model.predict(table(fixture_model.task, "population")[0])  # detection may need real records
    assert model.output_kind == fixture_model.output_kind


# binary_mlp_torch.onnx gives the scores before its Sigmoid, not its raw output, as logits
# (tests/loaders/test_onnx_exact_losses.py)
@pytest.mark.models(lambda f: f.format == "torchscript" or f.file == "multiclass_mlp_torch.onnx")
def test_outputs_override_wins(fixture_model: Any) -> None:
    features, _ = table(fixture_model.task, "population")
    other = "logits" if fixture_model.output_kind == "probabilities" else "probabilities"
    if other == "logits":
        model = load(fixture_model.path, outputs="logits")
        assert model.output_kind == "logits"
        np.testing.assert_array_equal(
            model.predict(features), load(fixture_model.path).predict(features)
        )
    else:
        model = load(fixture_model.path, outputs="probabilities")
        assert model.output_kind == "probabilities"
        # The loader returns the logits as they are; the audit refuses them as probabilities.
        np.testing.assert_array_equal(
            model.predict(features), load(fixture_model.path).predict(features)
        )
        with pytest.raises(
            InvalidInputError,
            match=r"^the model's predictions on the population data \(probabilities, as "
            r"requested\): (predictions must be probabilities in \[0, 1\]|rows of class "
            r"probabilities must sum to 1)",
        ):
            stream_table(
                model,
                TableRead(
                    MODELS / f"{fixture_model.task}_population.parquet",
                    "population",
                    "label",
                    tuple(FEATURES),
                    outputs_requested=True,
                ),
                classes=fixture_model.classes,
            )


def test_detection_rule() -> None:
    assert looks_like_probabilities(np.array([0.0, 0.5, 1.0]))
    assert not looks_like_probabilities(np.array([0.2, 1.5]))
    assert looks_like_probabilities(np.array([[0.2, 0.8], [1.0, 0.0]]))
    assert not looks_like_probabilities(np.array([[0.2, 0.7], [0.5, 0.5]]))
    assert not looks_like_probabilities(np.array([np.nan, 0.5]))
    probe = probe_features(3)
    assert probe.shape == (49, 3)
    assert np.abs(probe).max() > 100
    assert set(np.unique(probe_features(2, np.int64))) <= {0, 1}


def test_tiny_logits_are_detected_through_the_scaled_probe(tmp_path: Path) -> None:
    linear = torch.nn.Linear(4, 1)
    with torch.no_grad():
        linear.weight.fill_(0.01)  # |logit| < 1 on ordinary data
        linear.bias.fill_(0.5)
    path = tmp_path / "small.pt"
    names = {FEATURES_KEY: features_to_text(["a", "b", "c", "d"])}  # a known width: a probe
    torch.jit.save(torch.jit.script(linear.eval()), str(path), _extra_files=names)
    model = load(path)
    assert model.output_kind == "logits"
    assert looks_like_probabilities(model.predict(np.random.default_rng(0).normal(size=(50, 4))))


def test_unknown_width_defers_detection_to_the_first_prediction(tmp_path: Path) -> None:
    class Mean(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.sigmoid(x.mean(dim=1))

    model = load(save_script(Mean(), tmp_path / "mean.pt"))
    assert model.n_features is None
    with pytest.raises(InvalidInputError, match=r"detected on the first predict\(\) call"):
        _ = model.output_kind
    assert model.predict(np.ones((5, 3))).shape == (5,)
    assert model.output_kind == "probabilities"
    assert load(tmp_path / "mean.pt", outputs="logits").output_kind == "logits"


# ---------------------------------------------------------------------- ONNX


@pytest.mark.kernels
def test_zipmap_and_plain_onnx_give_class_ordered_arrays() -> None:
    features, _ = table("multiclass", "population")
    zipmap = load(MODELS / "multiclass_mlp.onnx", outputs="probabilities")  # ZipMap: dicts
    reference = load(MODELS / "multiclass_mlp.skops")
    assert zipmap.classes == reference.classes == ("a", "b", "c", "d")
    # the ONNX graph computes in float32, skops in float64: within their derived tolerance
    # (1.7e-7 apart on this machine); a different model or class order differs by > 1e-2
    expected = reference.predict(features)
    layers = twin_layers(MODELS / "multiclass_mlp.onnx")
    assert layers is not None
    scores = network_tolerance(layers, features, against_float64=True)
    tolerance = probability_tolerance(scores, expected, rounded=1)
    np.testing.assert_array_less(np.abs(zipmap.predict(features) - expected), tolerance)
    binary_zipmap = load(MODELS / "binary_logreg.onnx", outputs="probabilities")  # int64 keys
    binary_plain = load(MODELS / "binary_mlp.onnx")
    assert binary_zipmap.classes == binary_plain.classes == (0, 1)
    features, _ = table("binary", "population")
    assert binary_zipmap.predict(features).shape == binary_plain.predict(features).shape == (400,)


def test_onnx_input_dtype_is_respected() -> None:
    features, _ = table("multiclass", "population")
    double = load(MODELS / "multiclass_logreg.onnx", outputs="probabilities")
    assert double._input_dtype == np.float64
    # both in float64 (onnxruntime against numpy): a few units in the last place (2.2e-16
    # seen); a float32 step anywhere would show at 1e-8
    np.testing.assert_allclose(
        double.predict(features),
        load(MODELS / "multiclass_logreg.skops", outputs="probabilities").predict(features),
        rtol=0, atol=1e-12,
    )  # fmt: skip
    assert load(MODELS / "binary_mlp.onnx")._input_dtype == np.float32


def test_onnx_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    features, _ = table("binary", "population")
    model = load(MODELS / "binary_mlp.onnx")
    whole = model.predict(features)
    calls: list[int] = []
    run = model._run_batch

    def counting(batch: np.ndarray) -> np.ndarray:
        calls.append(batch.shape[0])
        return run(batch)

    monkeypatch.setattr(model, "_batch_size", 64)
    monkeypatch.setattr(model, "_run_batch", counting)
    np.testing.assert_array_equal(model.predict(features), whole)
    assert calls == [64] * 6 + [16]


def _onnx_from_torch(module: torch.nn.Module, path: Path, batch: int | None = None) -> Path:
    example = torch.zeros(batch or 2, 3)
    axes = None if batch else {"x": {0: "n"}, "y": {0: "n"}}
    torch.onnx.export(
        module, (example,), str(path), input_names=["x"], output_names=["y"],
        dynamic_axes=axes, dynamo=False,
    )  # fmt: skip
    return path


@pytest.mark.kernels
def test_onnx_with_fixed_batch_dimension_pads_the_last_chunk(tmp_path: Path) -> None:
    module = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Softmax(dim=1))
    path = _onnx_from_torch(module, tmp_path / "fixed.onnx", batch=4)
    model = load(path, outputs="probabilities")
    assert model.n_features == 3
    assert load(path).output_kind == "logits"  # the scores before the Softmax
    features = np.random.default_rng(1).normal(size=(10, 3))
    expected = module(torch.as_tensor(features, dtype=torch.float32)).detach().numpy()
    # torch and onnxruntime in float32, each with its softmax: within their derived
    # tolerance (3e-8 apart here); padding rows into the last chunk wrongly would give other
    # records' probabilities
    scores = network_tolerance(module_layers(module), features)
    tolerance = probability_tolerance(scores, expected, rounded=2)
    np.testing.assert_array_less(np.abs(model.predict(features) - expected), tolerance)


def test_onnx_nan_output_is_returned_and_refused_once_by_the_audit(tmp_path: Path) -> None:
    class Log(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.log(x[:, :1])

    path = _onnx_from_torch(Log(), tmp_path / "log.onnx")
    model = load(path, outputs="logits")
    output = model.predict(np.array([[1.0, 0, 0], [-1.0, 0, 0], [2.0, 0, 0]]))
    assert np.isnan(output[1])
    assert np.isfinite(output[[0, 2]]).all()
    pd.DataFrame({"a": [1.0, -1.0, 2.0], "b": 0.0, "c": 0.0, "y": [1, 0, 1]}).to_csv(
        tmp_path / "rows.csv", index=False
    )
    with pytest.raises(
        InvalidInputError,
        match=r"^the model's predictions on the train data \(logits, as requested\): "
        r"predictions must be finite logits; 1 value\(s\) are not, the first at index 1\. "
        r"Found nan\.$",
    ):
        stream_table(model, TableRead(tmp_path / "rows.csv", "train", "y", outputs_requested=True))


# --------------------------------------------------------------- TorchScript


def test_torchscript_width_is_not_guessed_and_dtype() -> None:
    model = load(MODELS / "multiclass_logreg.pt")
    assert model.n_features is None  # no recorded names: a first Linear layer says nothing
    assert model._input_dtype == np.float64
    assert load(MODELS / "binary_mlp.pt")._input_dtype == np.float32


def test_torchscript_without_linear_reports_width_errors(tmp_path: Path) -> None:
    class Fixed(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x @ torch.ones(3, 2)

    model = load(save_script(Fixed(), tmp_path / "fixed.pt"))
    assert model.n_features is None
    with pytest.raises(InvalidInputError, match=r"fixed\.pt must accept the features \(2 × 4 "):
        model.predict(np.ones((2, 4)))


# ------------------------------------------------------------------- inputs


@pytest.mark.models(lambda f: f.format != "torchscript", task="binary")
def test_wrong_width_names_both_widths(fixture_model: Any) -> None:
    model = load(fixture_model.path)
    with pytest.raises(
        InvalidInputError,
        match=rf"must have 8 columns, the input width of .*{fixture_model.file}\. Found 5\.",
    ):
        model.predict(np.zeros((3, 5)))


def test_features_must_be_two_dimensional_and_non_empty() -> None:
    model = load(MODELS / "binary_mlp.onnx")
    with pytest.raises(InvalidInputError, match=r"2-D array .* Found shape \(8,\)"):
        model.predict(np.zeros(8))
    with pytest.raises(InsufficientDataError, match=r"at least 1 record"):
        model.predict(np.zeros((0, 8)))
    with pytest.raises(InvalidInputError, match=r"numeric array"):
        model.predict(np.array([["a"] * 8]))


def test_outputs_argument_is_checked() -> None:
    with pytest.raises(InvalidInputError, match=r"outputs must be None, 'probabilities' or"):
        OnnxLoader().load(MODELS / "binary_mlp.onnx", outputs="scores")  # type: ignore[arg-type]


# --------------------------------------------------------- unreadable files


@pytest.mark.models
@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_corrupt_files_raise_one_line_input_file_errors(
    fixture_model: Any, damage: str, tmp_path: Path
) -> None:
    payload = fixture_model.path.read_bytes()
    broken = tmp_path / fixture_model.file
    broken.write_bytes(
        {"garbage": b"\x00not a model\xff" * 50, "truncated": payload[: len(payload) // 2],
         "empty": b""}[damage]
    )  # fmt: skip
    with pytest.raises(InputFileError) as caught:
        load(broken)
    message = str(caught.value)
    assert "\n" not in message
    assert str(broken) in message
    assert len(message) < 400


@pytest.mark.parametrize("name", ["none.onnx", "none.pt", "none.skops", "none.pkl"])
def test_missing_files(name: str) -> None:
    path = Path("/nonexistent") / name
    with pytest.raises(InputFileError, match="the model file must") as caught:
        load(path, trust=True)
    assert str(path) in str(caught.value)


# ------------------------------------------------------------ scikit-learn


@pytest.fixture(scope="module")
def binary_estimator() -> Any:
    return sio.load(MODELS / "binary_logreg.skops")


@pytest.mark.parametrize("suffix", [".pkl", ".pickle", ".joblib"])
def test_pickles_need_trust(suffix: str, tmp_path: Path, binary_estimator: Any) -> None:
    path = tmp_path / f"model{suffix}"
    if suffix == ".joblib":
        joblib.dump(binary_estimator, path)
    else:
        path.write_bytes(pickle.dumps(binary_estimator))
    with pytest.raises(InvalidInputError, match=r"run arbitrary code .*--trust-model") as caught:
        load(path)
    assert str(path) in str(caught.value)
    features, _ = table("binary", "population")
    model = load(path, trust=True, outputs="probabilities")
    np.testing.assert_allclose(
        model.predict(features), binary_estimator.predict_proba(features)[:, 1], rtol=1e-12
    )
    assert model.classes == (0, 1)


def test_skops_reviewed_types_load_without_trust(tmp_path: Path) -> None:
    """The optimiser an MLP keeps is on epsstar's reviewed list (unknown types:
    tests/loaders/test_skops_reviewed_types.py)."""
    features, labels = table("binary", "train")
    mlp = MLPClassifier(hidden_layer_sizes=(4,), max_iter=20, random_state=0)
    with pytest.warns(ConvergenceWarning):
        mlp.fit(features, labels)
    path = tmp_path / "mlp.skops"
    sio.dump(mlp, path)  # keeps the optimizer, a type skops alone does not trust
    assert sio.get_untrusted_types(file=path) == [
        "sklearn.neural_network._stochastic_optimizers.AdamOptimizer"
    ]
    model = load(path)
    np.testing.assert_allclose(
        model.predict(features), mlp.predict_proba(features)[:, 1], rtol=1e-12
    )


def test_sklearn_binary_takes_the_column_of_classes_1(tmp_path: Path) -> None:
    features, labels = table("multiclass", "train")
    estimator = LogisticRegression().fit(features, labels == "b")
    sio.dump(estimator, tmp_path / "b.skops")
    model = load(tmp_path / "b.skops", outputs="probabilities")
    assert model.classes == (False, True)
    np.testing.assert_allclose(
        model.predict(features), estimator.predict_proba(features)[:, 1], rtol=1e-12
    )
    logits = load(tmp_path / "b.skops", outputs="logits")
    assert logits.output_kind == "logits"
    np.testing.assert_allclose(logits.predict(features), estimator.decision_function(features))


def test_sklearn_decision_function_only_gives_logits(tmp_path: Path) -> None:
    features, labels = table("binary", "train")
    svm = LinearSVC().fit(features, labels)
    sio.dump(svm, tmp_path / "svm.skops")
    model = load(tmp_path / "svm.skops")
    assert model.output_kind == "logits"
    np.testing.assert_allclose(model.predict(features), svm.decision_function(features))
    with pytest.raises(
        InvalidInputError, match=r"needs a model with predict_proba\. Found LinearSVC"
    ):
        load(tmp_path / "svm.skops", outputs="probabilities")
    with pytest.raises(InvalidInputError, match=r"needs a model with decision_function"):
        load(MODELS / "binary_mlp.skops", outputs="logits")


def test_sklearn_refuses_non_classifiers(tmp_path: Path) -> None:
    from sklearn.linear_model import LinearRegression

    features, labels = table("binary", "train")
    sio.dump(LinearRegression().fit(features, labels), tmp_path / "reg.skops")
    with pytest.raises(InvalidInputError, match=r"must be a classifier .* Found LinearRegression"):
        load(tmp_path / "reg.skops")


def test_sklearn_model_fitted_on_a_dataframe_predicts_without_warnings(tmp_path: Path) -> None:
    import warnings

    import pandas as pd

    features, labels = table("binary", "train")
    frame = pd.DataFrame(features, columns=[f"x{i}" for i in range(8)])
    estimator = LogisticRegression().fit(frame, labels)
    sio.dump(estimator, tmp_path / "frame.skops")
    model = load(tmp_path / "frame.skops", outputs="probabilities")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_allclose(
            model.predict(features), estimator.predict_proba(frame)[:, 1], rtol=1e-12
        )


def test_loaders_need_no_trust_for_safe_formats() -> None:
    for loader, name in ((OnnxLoader(), "binary_mlp.onnx"), (TorchScriptLoader(), "binary_mlp.pt"),
                         (SklearnLoader(), "binary_mlp.skops")):  # fmt: skip
        assert loader.load(MODELS / name).predict(table("binary", "train")[0]).shape == (600,)
