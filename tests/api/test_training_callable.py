"""``epsstar.audit_training`` with a Python trainer gives what ``epsstar audit-training
--command`` gives for a command that trains the same way: the same canaries, runs, scores,
bounds and verdict; and a trainer's failures and hostile inputs are one-line errors."""

from __future__ import annotations

import json
import shlex
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import epsstar
from epsstar.exceptions import InvalidInputError
from tests.conftest import invoke

COLUMNS = ["a", "b", "c"]
FIT = """
import pickle, sys
import pandas as pd
from sklearn.linear_model import LogisticRegression

frame = pd.read_parquet(sys.argv[1])
model = LogisticRegression(C=1e4).fit(frame[["a", "b", "c"]], frame["label"])
with open(sys.argv[2] + "/model.pkl", "wb") as stream:
    pickle.dump(model, stream)
"""


def frame(seed: int, rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(rows, 3))
    labels = (features[:, 0] + rng.normal(size=rows) > 0).astype(np.int64)
    return pd.DataFrame(features, columns=COLUMNS).assign(label=labels)


def trainer(train: pd.DataFrame) -> Any:
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=1e4).fit(train[COLUMNS], train["label"])


#: What names the procedure, its files and its time rather than measures it.
NAMING = ("procedure", "data", "training_runs", "seconds")


def test_a_python_trainer_audits_as_the_command_that_trains_alike(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train, population = frame(0, 300), frame(1, 1500)
    train.to_parquet(tmp_path / "train.parquet", index=False)
    population.to_parquet(tmp_path / "population.parquet", index=False)
    (tmp_path / "fit.py").write_text(textwrap.dedent(FIT), encoding="utf-8")
    command = (
        f"{shlex.quote(sys.executable)} {shlex.quote(str(tmp_path / 'fit.py'))} {{train}} {{out}}"
    )
    code, _, err = invoke(
        [
            "audit-training",
            "--command",
            command,
            "--trust-model",
            "--train",
            str(tmp_path / "train.parquet"),
            "--population",
            str(tmp_path / "population.parquet"),
            "--label-column",
            "label",
            "--claimed-epsilon",
            "2",
            "--canaries",
            "100",
            "--json",
            str(tmp_path / "cli.json"),
            "--quiet",
        ],
        capsys,
    )
    assert code in (0, 1), err
    cli = json.loads((tmp_path / "cli.json").read_text(encoding="utf-8"))
    result = epsstar.audit_training(
        trainer, train, population, label="label", claimed_epsilon=2.0, canaries=100
    )
    document = result.to_dict()
    assert {k: v for k, v in document.items() if k not in NAMING} == {
        k: v for k, v in cli.items() if k not in NAMING
    }
    assert document["procedure"]["kind"] == "callable"
    assert document["procedure"]["trainer"].endswith(".trainer")
    assert [d["sha256"] for d in document["data"]] == [d["sha256"] for d in cli["data"]]
    assert [d["path"] for d in document["data"]] == [
        "the training DataFrame",
        "the population DataFrame",
    ]
    model = document["training_runs"][0]["model"]
    assert model["file"].startswith("in memory: sklearn.linear_model._logistic.")
    assert result.refuted == cli["refuted"]


def test_the_training_result_shows_and_writes_what_its_json_says(
    tmp_path: Path, validate_json: Any
) -> None:
    seeds: list[int] = []

    def seeded(train: pd.DataFrame, seed: int) -> Any:
        seeds.append(seed)
        return trainer(train)

    result = epsstar.audit_training(
        seeded, frame(0, 300), frame(1, 1500), label="label", canaries=100, claimed_epsilon=2.0
    )
    document = result.to_dict()
    assert seeds == [document["training_runs"][0]["seed"]]
    html = result._repr_html_()
    assert document["verdict"].split(":")[0] in html
    assert f"{document['epsilon_lower_bound']:.4f}" in html
    written = json.loads(result.write_json(tmp_path / "audit.json").read_text(encoding="utf-8"))
    assert written == document
    validate_json("audit-training", written)
    report = result.write_html(tmp_path / "audit.html").read_text(encoding="utf-8")
    assert "callable" in report or "trainer" in report


def failing(train: pd.DataFrame) -> Any:
    raise RuntimeError("out of memory\nsecond line")


@pytest.mark.parametrize(
    ("case", "words"),
    [
        (
            "a trainer that fails",
            ["must return a fitted model for run 1", "RuntimeError: out of memory"],
        ),
        ("a trainer that returns nothing a loader takes", ["Found a builtins.NoneType."]),
        ("not a function", ["the trainer must be a function", "Found a builtins.str."]),
        ("arrays for a table", ["the training data must be a table", "Found (X, y) arrays."]),
        ("no label column", ["the training DataFrame", "'label'"]),
        ("an unknown option", ["takes the options", "'canary'"]),
    ],
)
def test_hostile_training_audits_are_refused_in_one_line(case: str, words: list[str]) -> None:
    train: Any = frame(0, 300)
    procedure: Any = trainer
    options: dict[str, Any] = {"canaries": 100, "claimed_epsilon": 2.0}
    if case == "a trainer that fails":
        procedure = failing
    elif case == "a trainer that returns nothing a loader takes":
        procedure = lambda _: None  # noqa: E731
    elif case == "not a function":
        procedure = "fit.py"
    elif case == "arrays for a table":
        train = (np.zeros((10, 3)), np.zeros(10))
    elif case == "no label column":
        train = train.drop(columns="label")
    else:
        options["canary"] = 5
    with pytest.raises(InvalidInputError) as caught:
        epsstar.audit_training(procedure, train, frame(1, 1500), label="label", **options)
    message = str(caught.value)
    assert "\n" not in message
    assert "epsstar-tables-" not in message
    for word in words:
        assert word in message, (word, message)
