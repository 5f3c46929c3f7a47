"""A real ``mlflow models serve --env-manager local`` on loopback: the audit of a
three-class model through the MLflow scoring server equals the audit of its MLflow folder,
loss for loss."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from servers import free_port, server_process

from epsstar.audit.run import ModelFile, Tables, audit
from epsstar.cli import main

FEATURES = ["height", "weight", "age", "income"]


@dataclass(frozen=True)
class Served:
    url: str
    train: Path
    population: Path
    folder: Path


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One scoring server for the module, serving a logistic regression fitted on named
    columns and logged to answer ``predict_proba``."""
    if importlib.util.find_spec("mlflow") is None:
        pytest.skip("mlflow is not installed (the dev extra installs mlflow-skinny)")
    import mlflow.sklearn
    from sklearn.linear_model import LogisticRegression

    root = tmp_path_factory.mktemp("mlflow-serve")
    rng = np.random.default_rng(11)
    frame = pd.DataFrame(rng.normal(size=(360, 4)), columns=FEATURES)
    label = np.digitize(frame["height"] + 0.8 * rng.normal(size=360), [-0.5, 0.5])
    frame = frame.assign(label=label)
    frame[:180].to_csv(root / "train.csv", index=False)
    frame[180:].to_csv(root / "population.csv", index=False)
    model = LogisticRegression(C=50.0).fit(frame[FEATURES][:180], label[:180])
    mlflow.sklearn.save_model(model, root / "model", pyfunc_predict_fn="predict_proba")
    port = free_port()
    command = [
        sys.executable, "-m", "mlflow", "models", "serve", "-m", str(root / "model"),
        "--env-manager", "local", "-h", "127.0.0.1", "-p", str(port), "-w", "1",
    ]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    with server_process(command, f"{url}/ping", root / "mlflow.log", cwd=root):
        yield Served(url, root / "train.csv", root / "population.csv", root / "model")


def _tables(served: Served) -> Tables:
    return Tables(served.train, served.population, "label", features=FEATURES, batch_size=100)


def test_the_served_audit_equals_the_folder_audit_loss_for_loss(mlflow_server: Served) -> None:
    """The scoring server answers predict_proba's float64 values as JSON numbers that read
    back exactly, and receives the records' float64 values exactly: equal losses."""
    local = audit(
        ModelFile(mlflow_server.folder, outputs="probabilities", trust=True),
        _tables(mlflow_server),
    )
    served = audit(mlflow_server.url, _tables(mlflow_server))
    np.testing.assert_array_equal(served.train_losses, local.train_losses)
    np.testing.assert_array_equal(served.population_losses, local.population_losses)
    assert served.epsilon_star == local.epsilon_star
    assert served.lower_bound.epsilon == local.lower_bound.epsilon
    provenance = served.provenance
    assert provenance is not None
    assert provenance.served is not None
    assert provenance.served.protocol == "mlflow-scoring"
    assert provenance.served.server is not None
    assert provenance.served.server.startswith("mlflow ")


def test_the_command_line_audits_the_scoring_server(
    mlflow_server: Served,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    validate_json: Callable[[str, Any], None],
) -> None:
    out = tmp_path / "audit.json"
    code = main(
        ["audit", mlflow_server.url + "/invocations", "--train", str(mlflow_server.train),
         "--population", str(mlflow_server.population), "--label-column", "label",
         "--quiet", "--json", str(out), "--rate-limit", "50", "--batch-size", "60"]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    document = json.loads(out.read_text())
    validate_json("audit", document)
    assert document["provenance"]["served"]["url"] == mlflow_server.url + "/invocations"
    assert document["provenance"]["model_files"] == []
    assert f"model served at {mlflow_server.url}/invocations (mlflow-scoring, mlflow " in (
        captured.out
    )
