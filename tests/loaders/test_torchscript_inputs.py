"""TorchScript inputs: recorded names and width, never a guessed width; tensor columns."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch

from epsstar.audit.model.class_labels import FEATURES_KEY, OUTPUTS_KEY, features_to_text
from epsstar.audit.model.features import Features
from epsstar.exceptions import EpsstarWarning, InputFileError, InvalidInputError
from epsstar.loaders.torchscript import TorchScriptLoader
from tests.conftest import audit_files
from tests.numerics import SIGMOID_ROUNDINGS, gamma, module_layers, network_tolerance

ROOT = Path(__file__).resolve().parents[2]
KINDS = ROOT / "fixtures" / "models" / "kinds"

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def save(module: torch.nn.Module, path: Path, extra: dict[str, str] | None = None) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.save(torch.jit.script(module.eval()), str(path), _extra_files=extra or {})
    return path


def test_the_width_is_never_guessed_from_a_linear_layer(tmp_path: Path) -> None:
    torch.manual_seed(0)
    network = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    model = TorchScriptLoader().load(save(network, tmp_path / "net.pt"))
    assert model.n_features is None
    assert model.feature_names is None
    with pytest.raises(InvalidInputError, match=r"detected on the first predict\(\) call"):
        _ = model.output_kind
    features = np.random.default_rng(0).normal(size=(20, 4))
    expected = network(torch.as_tensor(features, dtype=torch.float32)).detach().double().numpy()
    tolerance = network_tolerance(module_layers(network), features)  # two float32 evaluations
    np.testing.assert_array_less(np.abs(model.predict(features) - expected), tolerance)
    assert model.output_kind == "logits"
    with pytest.raises(InvalidInputError, match=r"net\.pt must accept the features \(20 × 5 "):
        model.predict(np.ones((20, 5)))


def test_recorded_names_give_the_width_and_a_probe(tmp_path: Path) -> None:
    names = ["age", "education-num", "hours-per-week"]
    torch.manual_seed(0)
    path = save(
        torch.nn.Linear(3, 1), tmp_path / "named.pt", {FEATURES_KEY: features_to_text(names)}
    )
    model = TorchScriptLoader().load(path)
    assert model.feature_names == tuple(names)
    assert model.n_features == 3
    assert model.output_kind == "logits"  # the probe ran at load time
    assert model.output_reading.source == "detected"
    with pytest.raises(InvalidInputError, match=r"must have 3 columns, .* Found 2\."):
        model.predict(np.ones((4, 2)))


def test_a_stated_output_kind_is_read_and_a_bad_one_refused(tmp_path: Path) -> None:
    module = torch.nn.Linear(2, 2)
    stated = TorchScriptLoader().load(save(module, tmp_path / "s.pt", {OUTPUTS_KEY: "logits"}))
    assert stated.output_kind == "logits"
    assert stated.output_reading.source == "loader"
    assert TorchScriptLoader().load(tmp_path / "s.pt", outputs="probabilities").output_kind == (
        "probabilities"
    )
    save(module, tmp_path / "bad.pt", {OUTPUTS_KEY: "scores"})
    with pytest.raises(InputFileError, match=r"'epsstar.outputs' extra file must be .* 'scores'"):
        TorchScriptLoader().load(tmp_path / "bad.pt")


def test_the_digits_cnn_takes_its_tensor_column_as_it_is(
    fixture_builder: Callable[[str], ModuleType],
) -> None:
    (_, _), (images, labels) = fixture_builder("sklearn_models").digits_arrays()
    model = TorchScriptLoader().load(KINDS / "digits_cnn.pt")
    assert model.classes == tuple(range(10))
    assert model.n_features is None
    assert model.output_kind == "logits"
    features = Features(("X",), (images.astype(np.float64),))  # cast back to float32
    output = model.predict(features)
    assert output.shape == (len(labels), 10)
    assert output.dtype == np.float64
    assert np.mean(output.argmax(axis=1) == labels) > 0.85
    # The committed network is the builder's recipe.
    retrained = fixture_builder("sklearn_models").digits_cnn()
    with torch.no_grad():
        expected = retrained(torch.from_numpy(images)).double().numpy()
    np.testing.assert_allclose(output, expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(InvalidInputError, match=r"must be scalar columns to form a matrix"):
        TorchScriptLoader().load(KINDS / "digits_cnn.pt").predict(
            Features(("X", "Y"), (images, images))
        )


def test_auditing_the_digits_cnn_on_npz_files(
    tmp_path: Path, fixture_builder: Callable[[str], ModuleType]
) -> None:
    train_path, population_path = fixture_builder("sklearn_models").write_digits_npz(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EpsstarWarning)
        result = audit_files(KINDS / "digits_cnn.pt", train_path, population_path, label_column="y")
    assert result.provenance.output_kind == "logits"
    assert np.isfinite(result.epsilon_star)


@pytest.mark.parametrize("logits_first", [True, False])
def test_a_module_returning_logits_and_softmax_is_read_as_logits(
    tmp_path: Path, logits_first: bool
) -> None:
    """``return logits, softmax(logits)`` (or the reverse): the logits are audited, and the
    reading says which tensor; ``outputs="probabilities"`` takes the other."""
    torch = pytest.importorskip("torch")
    from epsstar.loaders.torchscript import TorchScriptLoader

    class Pair(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(4, 3)
            self.logits_first = logits_first

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            logits = self.linear(x)
            if self.logits_first:
                return logits, logits.softmax(dim=1)
            return logits.softmax(dim=1), logits

    torch.manual_seed(0)
    network = Pair().eval()
    path = tmp_path / "pair.pt"
    torch.jit.save(torch.jit.script(network), path)
    features = np.random.default_rng(0).normal(size=(6, 4))
    with torch.inference_mode():
        logits = network.linear(torch.tensor(features, dtype=torch.float32)).double().numpy()
    model = TorchScriptLoader().load(path)
    np.testing.assert_array_equal(model.predict(features), logits)  # the same float32 values
    assert model.output_kind == "logits"
    reading = model.output_reading
    assert reading is not None
    place = "first" if logits_first else "second"
    assert reading.reason == f"the {place} of the two tensors the module returns, whose " \
        "activation is the other"  # fmt: skip
    probabilities = TorchScriptLoader().load(path, outputs="probabilities").predict(features)
    # a float32 softmax: each probability rounded (exp, add, divide), their sum off 1 by γ
    rounding = gamma(probabilities.shape[1] + SIGMOID_ROUNDINGS)
    np.testing.assert_array_less(np.abs(probabilities.sum(axis=1) - 1.0), rounding)
