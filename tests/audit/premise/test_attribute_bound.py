"""The training bound beside the attribute guess: from the (ε, δ) a model declares, the
closed form (e^ε − 1 + 2δ) / (e^ε + 1), in the JSON and the summary; none for a model that
declares no DP training."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import onnx
import pandas as pd
import pytest

from epsstar.audit.model.declared_privacy import PRIVACY_KEY
from epsstar.cli import main
from epsstar.statistics.readings.attribute import FROM_DP, attribute_security_from_dp

MODELS = Path(__file__).resolve().parents[3] / "fixtures" / "models"
FEATURES = "x0,x1,x2,x3,x4,x5,x6,x7"


@pytest.mark.parametrize(
    ("epsilon", "delta"), [(0.5, 0.0), (1.0, 1e-5), (3.0, 1e-3), (8.0, 1e-6), (60.0, 0.0)]
)
def test_the_bound_is_humphries_closed_form(epsilon: float, delta: float) -> None:
    # By hand: the largest TPR − FPR of (ε, δ)-DP, (e^ε − 1 + 2δ) / (e^ε + 1).
    expected = (math.exp(epsilon) - 1 + 2 * delta) / (math.exp(epsilon) + 1)
    found = attribute_security_from_dp(epsilon, delta)
    # 1e-12: the module evaluates tanh(ε/2) + 2δ/(e^ε + 1), equal in exact arithmetic.
    assert found.advantage == pytest.approx(expected, abs=1e-12)
    assert found.beta == pytest.approx(1 - expected, abs=1e-12)
    assert (found.source, found.r_norm, found.error_order) == (FROM_DP, None, None)


def _binary_x7(folder: Path) -> None:
    """The binary fixture's tables with x7 rounded to -1 or 1: an input with two values."""
    for side in ("train", "population"):
        frame = pd.read_csv(MODELS / f"binary_{side}.csv")
        frame["x7"] = (frame["x7"] > 0).astype(float) * 2 - 1
        frame.to_csv(folder / f"{side}.csv", index=False)


def _audit(folder: Path, model: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Any, str]:
    out = folder / f"{model.stem}.json"
    argv = ["audit", str(model), "--train", str(folder / "train.csv"), "--population"]
    argv += [str(folder / "population.csv"), "--label-column", "label", "--features", FEATURES]
    argv += ["--attribute", "x7", "--top-records", "0", "--json", str(out)]
    argv += ["--no-blind-baseline", "not needed for the attribute bound"]
    assert main(argv) == 0
    return json.loads(out.read_text())["attribute_inference"], capsys.readouterr().out


def test_a_model_declaring_dp_gets_its_bound_and_one_declaring_none_gets_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _binary_x7(tmp_path)
    declared = onnx.load(str(MODELS / "binary_logreg.onnx"))
    entry = declared.metadata_props.add()
    entry.key = PRIVACY_KEY
    entry.value = json.dumps({"private": True, "epsilon": 2.0, "delta": 1e-5, "accountant": "pld"})
    private = tmp_path / "private.onnx"
    onnx.save(declared, str(private))

    inferred, stdout = _audit(tmp_path, private, capsys)
    bound = inferred["training_bound"]
    expected = (math.exp(2.0) - 1 + 2e-5) / (math.exp(2.0) + 1)
    assert bound["advantage_bound"] == pytest.approx(expected, abs=1e-12)
    assert bound["source"] == FROM_DP
    assert f"advantage at most {expected:.4f}" in stdout

    inferred, stdout = _audit(tmp_path, MODELS / "binary_logreg.onnx", capsys)
    assert inferred["training_bound"] is None
    assert "training bound" not in stdout
