"""Audits of models whose losses take a few values, saved by skl2onnx: a shallow tree and
a model whose probabilities are rounded read 0 where they do not leak, a fully grown tree
is caught, and no output prints a headline above 0 beside a leak test that finds none."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from skl2onnx import to_onnx
from sklearn.datasets import make_classification
from sklearn.tree import DecisionTreeClassifier

from tests.conftest import invoke

COLUMNS = [f"x{i}" for i in range(8)]


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4,000 training and 4,000 population rows of one distribution, 20 % of labels noise."""
    folder = tmp_path_factory.mktemp("discrete-models")
    x, y = make_classification(8000, 8, n_informative=5, flip_y=0.2, random_state=0)
    for name, rows in (("train", slice(0, 4000)), ("population", slice(4000, 8000))):
        frame = pd.DataFrame(x[rows].astype(np.float32), columns=COLUMNS)
        frame["label"] = y[rows]
        frame.to_csv(folder / f"{name}.csv", index=False)
    return folder


def _tree(tables: Path, name: str, **options: Any) -> Path:
    frame = pd.read_csv(tables / "train.csv")
    x = frame[COLUMNS].to_numpy(np.float32)
    model = DecisionTreeClassifier(random_state=0, **options).fit(x, frame["label"])
    # opset 17: skl2onnx 1.20 with onnx 1.17 would write 22, which onnxruntime 1.18 refuses
    onnx = to_onnx(model, x[:1], options={"zipmap": False}, target_opset=17)
    path = tables / f"{name}.onnx"
    path.write_bytes(onnx.SerializeToString())
    return path


def _audit(
    model: Path, tables: Path, out: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str, dict[str, Any]]:
    code, stdout, _ = invoke(
        [
            "audit",
            str(model),
            "--train",
            str(tables / "train.csv"),
            "--population",
            str(tables / "population.csv"),
            "--label-column",
            "label",
            "--features",
            ",".join(COLUMNS),
            "--json",
            str(out / "audit.json"),
            "--report",
            str(out / "audit.html"),
            *extra,
        ],
        capsys,
    )
    return code, stdout, json.loads((out / "audit.json").read_text(encoding="utf-8"))


def _no_contradiction(stdout: str, html: str, document: dict[str, Any]) -> None:
    """A headline above 0 never stands beside "no leak found" without saying why."""
    headline = document["epsilon_star"]
    gate = document["gate"]
    if gate is None or gate["leak_found"] or headline == 0:
        return
    line = next(text for text in stdout.splitlines() if "gate (" in text)
    assert "not held to this test" in line
    leak = re.search(r'id="leak-test">([^<]*)<', html)
    assert leak is not None
    assert "not held to this test" in leak.group(1)


def test_a_shallow_tree_that_does_not_leak_reads_zero(
    tables: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    validate_json: Callable[[str, Any], None],
) -> None:
    model = _tree(tables, "shallow", max_leaf_nodes=16, min_samples_leaf=200)
    code, stdout, document = _audit(model, tables, tmp_path, capsys, "--max-epsilon", "1")
    validate_json("audit", document)
    assert code == 0
    assert document["method"] == "atoms-tested"
    assert document["gate"]["leak_found"] is False
    assert document["epsilon_star"] == 0.0
    assert all(point["epsilon_star"] == 0.0 for point in document["epsilon_star_by_delta"])
    assert "distinct values" in document["note"]
    first = stdout.splitlines()[0]
    assert first.startswith("Epsilon* = 0.0000")
    assert "atoms-tested" in first
    _no_contradiction(stdout, (tmp_path / "audit.html").read_text(encoding="utf-8"), document)


def test_a_fully_grown_tree_is_caught(
    tables: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Every training record at its own leaf: all training losses at the clip value.
    model = _tree(tables, "grown")
    code, stdout, document = _audit(model, tables, tmp_path, capsys, "--max-epsilon", "1")
    assert code == 1
    assert document["method"] == "atoms-tested"
    assert document["gate"]["leak_found"] is True
    bound = document["epsilon_lower_bound"]
    assert bound > 1.0
    assert document["epsilon_star"] >= bound
    assert "resolution" in document["note"]
    assert "limited by the number of records" in stdout


def test_a_parametric_headline_beside_no_leak_says_why(
    tables: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The paper's estimator is not held to the leak test: where the test finds no leak and
    # the estimate is above 0, the gate line and the report say so.
    model = _tree(tables, "shallow-parametric", max_leaf_nodes=16, min_samples_leaf=200)
    _, stdout, document = _audit(
        model, tables, tmp_path, capsys, "--max-epsilon", "5", "--method", "parametric"
    )
    assert document["gate"]["leak_found"] is False
    assert document["epsilon_star"] > 0
    _no_contradiction(stdout, (tmp_path / "audit.html").read_text(encoding="utf-8"), document)


def _rounded_logistic_regression(tables: Path) -> Path:
    """A logistic regression whose ONNX graph rounds its probabilities to 0.01, as a model
    quantised for serving outputs them."""
    import onnx
    from onnx import helper, numpy_helper
    from sklearn.linear_model import LogisticRegression

    frame = pd.read_csv(tables / "train.csv")
    x = frame[COLUMNS].to_numpy(np.float32)
    model = LogisticRegression(max_iter=1000).fit(x, frame["label"])
    original = to_onnx(model, x[:1], options={"zipmap": False}, target_opset=17)
    graph = original.graph
    for node in graph.node:
        node.output[:] = [
            "raw_probabilities" if name == "probabilities" else name for name in node.output
        ]
    hundred = numpy_helper.from_array(np.array(100.0, dtype=np.float32), "hundred")
    graph.initializer.append(hundred)
    graph.node.extend(
        [
            helper.make_node("Mul", ["raw_probabilities", "hundred"], ["scaled"]),
            helper.make_node("Round", ["scaled"], ["rounded"]),
            helper.make_node("Div", ["rounded", "hundred"], ["probabilities"]),
        ]
    )
    rounded = helper.make_model(graph, opset_imports=list(original.opset_import))
    onnx.checker.check_model(rounded)
    path = tables / "rounded.onnx"
    path.write_bytes(rounded.SerializeToString())
    return path


def test_a_model_with_rounded_probabilities_that_does_not_leak_reads_zero(
    tables: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _rounded_logistic_regression(tables)
    code, stdout, document = _audit(model, tables, tmp_path, capsys, "--max-epsilon", "1")
    assert code == 0
    assert document["gate"]["leak_found"] is False
    assert document["epsilon_star"] == 0.0
    _no_contradiction(stdout, (tmp_path / "audit.html").read_text(encoding="utf-8"), document)
