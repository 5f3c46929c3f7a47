"""``epsstar.audit`` is callable in every import order, and its result shows in a notebook what
its JSON says and writes the JSON and the HTML report the command line writes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import epsstar
from tests.conftest import invoke

pytestmark = pytest.mark.filterwarnings("ignore::epsstar.exceptions.ColumnOrderWarning")

COLUMNS = ["age", "hours", "score"]


def frame(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(250, 3))
    labels = (features @ [1.0, -1.0, 0.5] + rng.normal(size=250) > 0).astype(np.int64)
    return pd.DataFrame(features, columns=COLUMNS).assign(label=labels)


@pytest.fixture(scope="module")
def fitted() -> Any:
    from sklearn.ensemble import RandomForestClassifier

    train = frame(0)
    forest = RandomForestClassifier(n_estimators=20, random_state=0, n_jobs=1)
    return forest.fit(train[COLUMNS], train.label)


CALL = """
import numpy as np, pandas as pd
from sklearn.linear_model import LogisticRegression
rng = np.random.default_rng(0)
def frame():
    x = rng.normal(size=(200, 2))
    return pd.DataFrame(x, columns=["a", "b"]).assign(label=(x[:, 0] > 0).astype(int))
train, population = frame(), frame()
model = LogisticRegression().fit(train[["a", "b"]], train.label)
result = epsstar.audit(model, train, population, label="label")
assert result.provenance.train == "the training DataFrame"
from epsstar.audit import AuditOptions, AuditResult, ModelFile, ModelObject, Tables, audit
assert callable(epsstar.audit) and audit.__module__ == "epsstar.audit.run"
print("audited", type(result).__name__)
"""

#: What a session imports before it calls ``epsstar.audit``.
ORDERS = {
    "epsstar alone": "import epsstar",
    "a submodule first": "import epsstar.audit.run\nimport epsstar",
    "the records first": "from epsstar.audit import Tables\nimport epsstar",
    "the package first": "import epsstar.audit\nimport epsstar",
}


@pytest.mark.parametrize("order", ORDERS)
def test_epsstar_audit_is_callable_in_every_import_order(order: str, tmp_path: Path) -> None:
    script = ORDERS[order] + "\n" + textwrap.dedent(CALL)
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "audited NotebookResult"


def cells(html: str) -> dict[str, str]:
    """The rows of the notebook's table, ``{what: value}``."""
    found = re.findall(r"<th[^>]*>([^<]*)</th><td[^>]*>([^<]*)</td>", html)
    return dict(found)


@pytest.mark.parametrize("limit", [None, 0.001, 50.0], ids=["no gate", "fails", "passes"])
def test_the_notebook_table_says_what_the_json_says(fitted: Any, limit: float | None) -> None:
    result = epsstar.audit(fitted, frame(0), frame(1), label="label", max_epsilon=limit)
    document = result.to_dict()
    shown = cells(result._repr_html_())
    assert shown["Epsilon*"].startswith(f"{document['epsilon_star']:.4f} ")
    assert shown["lower bound"].startswith(f"{document['epsilon_lower_bound']:.4f} at 95%")
    gate = {None: "no gate", True: "PASS", False: "FAIL"}[document["passed"]]
    assert shown["gate"].startswith(gate)
    premise = {None: "not checked", True: "holds", False: "fails"}[document["premise_holds"]]
    assert shown["premise"].startswith(premise)
    assert shown["model"] == document["provenance"]["model"]
    assert "RandomForestClassifier" in shown["model"]
    assert repr(result).splitlines()[0] == f"Epsilon*: {shown['Epsilon*']}"


def test_text_in_the_notebook_table_is_escaped(fitted: Any) -> None:
    train = frame(0).rename(columns={"label": "<b>y</b>"})
    population = frame(1).rename(columns={"label": "<b>y</b>"})
    result = epsstar.audit(fitted, train, population, label="<b>y</b>")
    assert result.provenance.label_column == "<b>y</b>"
    assert "<b>" not in result._repr_html_()


def test_the_files_written_are_the_command_lines(
    fitted: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    validate_json: Callable[[str, Any], None],
) -> None:
    import pickle

    (tmp_path / "model.pkl").write_bytes(pickle.dumps(fitted))
    frame(0).to_parquet(tmp_path / "train.parquet", index=False)
    frame(1).to_parquet(tmp_path / "population.parquet", index=False)
    code, _, err = invoke(
        [
            "audit",
            str(tmp_path / "model.pkl"),
            "--trust-model",
            "--train",
            str(tmp_path / "train.parquet"),
            "--population",
            str(tmp_path / "population.parquet"),
            "--label-column",
            "label",
            "--json",
            str(tmp_path / "cli.json"),
        ],
        capsys,
    )
    assert code == 0, err
    result = epsstar.audit(fitted, frame(0), frame(1), label="label")
    written = result.write_json(tmp_path / "notebook.json")
    document = json.loads(written.read_text(encoding="utf-8"))
    validate_json("audit", document)
    assert document == result.to_dict()
    cli = json.loads((tmp_path / "cli.json").read_text(encoding="utf-8"))
    naming = {"provenance", "model_sha256"}
    assert {k: v for k, v in document.items() if k not in naming} == {
        k: v for k, v in cli.items() if k not in naming
    }
    assert document["provenance"]["train_sha256"] == cli["provenance"]["train_sha256"]
    report = result.write_html(tmp_path / "notebook.html").read_text(encoding="utf-8")
    assert report.startswith("<!DOCTYPE html>") or report.lstrip().lower().startswith("<!doctype")
    assert "in memory: sklearn.ensemble._forest.RandomForestClassifier" in report
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_an_object_that_cannot_be_serialised_is_said_not_hashed(
    validate_json: Callable[[str, Any], None],
) -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    train = frame(0)
    doubled = FunctionTransformer(lambda x: 2 * x)  # a lambda: no pickle
    model = make_pipeline(doubled, LogisticRegression()).fit(train[COLUMNS], train.label)
    result = epsstar.audit(model, train, frame(1), label="label")
    assert result.provenance.model == "in memory: sklearn.pipeline.Pipeline (not hashed)"
    document = result.to_dict()
    assert document["model_sha256"] == "not hashed"
    validate_json("audit", document)


def test_warnings_point_at_the_line_that_called_the_audit(fitted: Any) -> None:
    train = frame(0)
    population = pd.concat([train.iloc[:125], frame(1).iloc[:125]], ignore_index=True)
    with pytest.warns(epsstar.exceptions.SuspectDataWarning) as caught:
        epsstar.audit(fitted, train, population, label="label")
    assert {Path(warning.filename) for warning in caught} == {Path(__file__)}


def test_the_staged_tables_are_gone_when_the_call_returns(
    fitted: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    epsstar.audit(fitted, frame(0), frame(1), label="label")
    with pytest.raises(epsstar.exceptions.InvalidInputError):
        epsstar.audit(fitted, frame(0).iloc[:0], frame(1), label="label")
    assert list(tmp_path.iterdir()) == []
