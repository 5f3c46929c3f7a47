"""Every built-in loader passes the loader contract suite on every model fixture_model."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import epsstar.audit.model.contract
from epsstar.audit.model.plugins import get_loader, loader_for_path
from epsstar.loaders.onnx import OnnxLoader
from tests.fixture_twins import twin_layers
from tests.numerics import network_tolerance, probability_tolerance

MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "models"


@cache
def table(task: str, part: str) -> tuple[np.ndarray, np.ndarray]:
    """Features (float64) and labels of one split of the fixture data."""
    frame = pd.read_parquet(MODELS / f"{task}_{part}.parquet")
    return frame[[f"x{i}" for i in range(8)]].to_numpy(dtype=np.float64), frame["label"].to_numpy()


def tolerance(path: Path, features: np.ndarray) -> dict[str, float]:
    """The contract's tolerance for a float32 fixture: a row alone or in chunks is another
    float32 evaluation of its network (``tests/numerics.py``); the defaults otherwise."""
    layers = twin_layers(path)
    if layers is None:
        return {}
    loaded = loader_for_path(path)[0].load(path)
    if getattr(loaded, "input_dtype", None) == "float64":
        return {}
    scores = network_tolerance(layers, features)
    output = loaded.predict(features)  # a TorchScript file knows its output kind after it
    if loaded.output_kind == "probabilities":
        scores = probability_tolerance(scores, output, rounded=2)
    return {"rtol": 0.0, "atol": float(np.max(scores))}


@pytest.mark.kernels
@pytest.mark.parametrize("check", epsstar.audit.model.contract.CHECKS)
@pytest.mark.models
def test_builtin_loaders_meet_the_contract(fixture_model: Any, check: str) -> None:
    loader, _ = get_loader({"skops": "sklearn"}.get(fixture_model.format, fixture_model.format))
    features, _ = table(fixture_model.task, "population")
    limits = tolerance(fixture_model.path, features)
    checks = dict(
        epsstar.audit.model.contract.loader_checks(loader, fixture_model.path, features, **limits)
    )
    # A loader that cannot know the output kind before it sees records (no input width, or a
    # scikit-learn model choosing its method) detects it on the first predict().
    checks["model_protocol"]()
    checks[check]()


# The one-line form a third party writes for its own loader.
test_one_line_contract = epsstar.audit.model.contract.loader_contract_test(
    OnnxLoader(),
    MODELS / "binary_mlp.onnx",
    table("binary", "population")[0],
    **tolerance(MODELS / "binary_mlp.onnx", table("binary", "population")[0]),
)


def test_check_loader_runs_everything_and_compares_expected() -> None:
    loader, _ = get_loader("torchscript")
    features, _ = table("multiclass", "population")
    expected = loader.load(MODELS / "multiclass_logreg.pt").predict(features)
    epsstar.audit.model.contract.check_loader(
        loader, MODELS / "multiclass_logreg.pt", features, expected=expected
    )
    with pytest.raises(AssertionError, match=r"'expected_predictions' failed"):
        epsstar.audit.model.contract.check_loader(
            loader, MODELS / "multiclass_logreg.pt", features, expected=expected + 1e-3
        )


class _Sloppy:
    """A loader breaking the contract: it ignores the width and returns float32."""

    name = "sloppy"
    suffixes = (".onnx",)

    def load(self, path, *, outputs=None, trust=False):  # type: ignore[no-untyped-def]
        return _SloppyModel()


class _SloppyModel:
    n_features = None
    classes = None
    output_kind = "logits"

    def predict(self, features):  # type: ignore[no-untyped-def]
        return np.asarray(features, dtype=np.float32).sum(axis=-1)


@pytest.mark.parametrize(
    ("check", "message"),
    [
        ("output_shape_and_dtype", "must be float64"),
        ("width_validation", "must raise InvalidInputError"),
        ("outputs_override", "gave 'logits'"),
        ("unreadable_files", "must raise InputFileError"),
    ],
)
def test_contract_catches_a_broken_loader(check: str, message: str) -> None:
    checks = dict(
        epsstar.audit.model.contract.loader_checks(
            _Sloppy(), MODELS / "binary_mlp.onnx", table("binary", "population")[0]
        )
    )
    with pytest.raises(AssertionError, match=message):
        checks[check]()


def test_contract_refuses_too_few_rows() -> None:
    with pytest.raises(ValueError, match=r"at least 10 rows"):
        epsstar.audit.model.contract.loader_checks(
            OnnxLoader(), MODELS / "binary_mlp.onnx", np.ones((3, 8))
        )
