"""A real MLServer (its scikit-learn runtime) on loopback: the audit of a model through the
Open Inference Protocol equals the audit of the same model from its file, loss for loss."""

from __future__ import annotations

import importlib.util
import json
import shutil
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

FEATURES = [f"x{i}" for i in range(6)]


@dataclass(frozen=True)
class Served:
    root: str
    train: Path
    population: Path
    model_file: Path


def _mlserver() -> str:
    found = shutil.which("mlserver", path=str(Path(sys.executable).parent)) or shutil.which(
        "mlserver"
    )
    if found is None or importlib.util.find_spec("mlserver_sklearn") is None:
        pytest.skip("MLServer and its scikit-learn runtime are not installed (the dev extra)")
    return found


@pytest.fixture(scope="module")
def mlserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One MLServer for the module, serving a random forest twice: as ``bare`` (no metadata,
    as its scikit-learn runtime has by default) and as ``described`` (its input and its
    predict_proba output stated in the model settings)."""
    import joblib
    from sklearn.ensemble import RandomForestClassifier

    command = _mlserver()
    root = tmp_path_factory.mktemp("mlserver")
    rng = np.random.default_rng(3)
    x = rng.normal(size=(400, 6))
    y = (x[:, 0] - x[:, 1] + rng.normal(size=400) > 0).astype(int)
    model = RandomForestClassifier(n_estimators=25, random_state=0).fit(x[:200], y[:200])
    for name, rows in (("train", slice(0, 200)), ("population", slice(200, 400))):
        pd.DataFrame(x[rows], columns=FEATURES).assign(label=y[rows]).to_csv(
            root / f"{name}.csv", index=False
        )
    joblib.dump(model, root / "model.joblib")
    described = {
        "inputs": [{"name": "records", "datatype": "FP64", "shape": [-1, 6]}],
        "outputs": [{"name": "predict_proba", "datatype": "FP64", "shape": [-1, 2]}],
    }
    for name, metadata in (("bare", {}), ("described", described)):
        folder = root / "models" / name
        folder.mkdir(parents=True)
        shutil.copy(root / "model.joblib", folder / "model.joblib")
        settings = {
            "name": name,
            "implementation": "mlserver_sklearn.SKLearnModel",
            "parameters": {"uri": "./model.joblib"},
            **metadata,
        }
        (folder / "model-settings.json").write_text(json.dumps(settings))
    port = free_port()
    server = {
        "host": "127.0.0.1",
        "http_port": port,
        "grpc_port": free_port(),
        "metrics_port": free_port(),
        "parallel_workers": 0,
    }
    (root / "models" / "settings.json").write_text(json.dumps(server))
    base = f"http://127.0.0.1:{port}"
    with server_process(
        [command, "start", str(root / "models")],
        f"{base}/v2/models/described/ready",
        root / "mlserver.log",
        cwd=root,
    ):
        yield Served(base, root / "train.csv", root / "population.csv", root / "model.joblib")


def _tables(served: Served) -> Tables:
    return Tables(served.train, served.population, "label", features=FEATURES, batch_size=64)


def test_the_served_audit_equals_the_file_audit_loss_for_loss(mlserver: Served) -> None:
    """MLServer answers float64 probabilities (FP64) and JSON carries every float64 exactly
    (shortest round-trip text both ways), so the losses are equal, not merely close."""
    local = audit(
        ModelFile(mlserver.model_file, outputs="probabilities", trust=True), _tables(mlserver)
    )
    for name in ("described", "bare"):
        url = f"{mlserver.root}/v2/models/{name}"
        model = ModelFile.of(url)
        if name == "bare":  # no metadata: the probabilities are asked for by name
            from epsstar.audit.inputs.served import Serving

            model = ModelFile(model.path, url=url, serving=Serving(output="predict_proba"))
        served = audit(model, _tables(mlserver))
        np.testing.assert_array_equal(served.train_losses, local.train_losses)
        np.testing.assert_array_equal(served.population_losses, local.population_losses)
        assert served.epsilon_star == local.epsilon_star
        assert served.lower_bound.epsilon == local.lower_bound.epsilon
        assert served.epsilon_star > 0  # a forest remembers its training records
        provenance = served.provenance
        assert provenance is not None
        assert provenance.served is not None
        assert provenance.served.model_name == name
        assert provenance.served.server is not None
        assert provenance.served.server.startswith("mlserver ")


def test_the_command_line_audits_the_served_model(
    mlserver: Served,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    validate_json: Callable[[str, Any], None],
) -> None:
    common = [
        "--train", str(mlserver.train), "--population", str(mlserver.population),
        "--label-column", "label", "--features", ",".join(FEATURES), "--quiet",
    ]  # fmt: skip
    served, local = tmp_path / "served.json", tmp_path / "local.json"
    url = f"{mlserver.root}/v2/models/described"
    assert main(["audit", url, *common, "--json", str(served)]) == 0
    assert main(
        ["audit", str(mlserver.model_file), *common, "--json", str(local), "--trust-model",
         "--outputs", "probabilities"]
    ) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert f"model served at {url} (open-inference-v2, described, mlserver " in out
    documents = [json.loads(path.read_text()) for path in (served, local)]
    validate_json("audit", documents[0])
    for key in ("epsilon_star", "epsilon_lower_bound", "empirical_epsilon_star"):
        assert documents[0][key] == documents[1][key], key
    assert documents[0]["provenance"]["served"]["protocol"] == "open-inference-v2"


def test_the_runtime_s_default_labels_are_refused(
    mlserver: Served, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["audit", f"{mlserver.root}/v2/models/bare", "--train", str(mlserver.train),
         "--population", str(mlserver.population), "--label-column", "label", "--quiet"]
    )  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("epsstar audit: error: ")
    assert "--served-output predict_proba" in err
    assert "Found the output 'predict' of 'INT64'." in err
