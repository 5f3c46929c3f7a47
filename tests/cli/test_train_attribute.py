"""``epsstar train --attribute sex`` on a small Adult sample, then ``epsstar audit --attribute
sex``: the audit shows the data-dependent bound the training recorded, the measured advantage
is within it, and bad input is one line with exit code 2."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from epsstar.audit.premise.tracked_bound import (
    FROM_EXACT_MEMBERSHIP,
    FROM_TRAINING_RECORD,
    tracked_bound,
)
from epsstar.cli import main
from epsstar.cli.exit_codes import EXIT_OK, EXIT_USAGE
from epsstar.exceptions import InputFileError
from epsstar.statistics.readings.attribute import FROM_DP, attribute_security_from_dp
from tests.training.test_attribute import adult_numeric

ROWS = 800


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("adult")
    adult_numeric(folder, ROWS)
    return folder


def _train(folder: Path, out: Path, *extra: str) -> list[str]:
    return [
        "train",
        "--data",
        str(folder / "train.csv"),
        "--population",
        str(folder / "population.csv"),
        "--label-column",
        "income",
        "--epochs",
        "2",
        "--batch-size",
        "64",
        "--out",
        str(out),
        "--quiet",
        *extra,
    ]


def _audit(folder: Path, model: Path, out: Path, column: str) -> Any:
    argv = ["audit", str(model), "--train", str(folder / "train.csv"), "--population"]
    argv += [str(folder / "population.csv"), "--label-column", "income", "--attribute", column]
    argv += ["--no-blind-baseline", "not needed here", "--top-records", "0"]
    argv += ["--json", str(out), "--quiet"]
    assert main(argv) == EXIT_OK
    return json.loads(out.read_text())["attribute_inference"]


@pytest.fixture(scope="module")
def trained(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("model") / "m"
    assert main(_train(folder, out, "--target-epsilon", "2", "--attribute", "sex")) == EXIT_OK
    return out


def test_the_audit_reads_the_bound_training_recorded(
    trained: Path, folder: Path, tmp_path: Path, validate_json: Callable[[str, Any], None]
) -> None:
    record = json.loads((trained / "training.json").read_text())
    validate_json("training", record)
    tracked = record["attribute_inference"]
    assert tracked["column"] == "sex"
    assert tracked["values"] == [0.0, 1.0]
    assert tracked["steps"] == record["hyperparameters"]["steps"] == len(tracked["r_per_step"])
    assert (
        tracked["bound"]["advantage_bound"] <= tracked["data_independent_bound"]["advantage_bound"]
    )

    inferred = _audit(folder, trained / "model.onnx", tmp_path / "audit.json", "sex")
    bound = inferred["training_bound"]
    assert bound["source"] == FROM_TRAINING_RECORD
    assert bound["advantage_bound"] == tracked["bound"]["advantage_bound"]
    assert bound["r_norm"] == tracked["bound"]["r_norm"]
    # a valid bound: the measured advantage is within it
    assert inferred["advantage"] <= bound["advantage_bound"]


def test_another_column_gets_the_exact_membership_advantage(
    trained: Path, folder: Path, tmp_path: Path
) -> None:
    """Without a tracked bound for the column, the PLD's exact membership advantage of the
    run (training.json), tighter than eq. 5 of the declared (ε, δ); a model file without
    its training.json gets eq. 5."""
    record = json.loads((trained / "training.json").read_text())
    exact = record["privacy"]["bayes_security"]["add_remove"]["advantage_exact"]
    declared = attribute_security_from_dp(record["privacy"]["epsilon"], record["privacy"]["delta"])
    inferred = _audit(folder, trained / "model.onnx", tmp_path / "audit.json", "race")
    assert inferred["training_bound"]["source"] == FROM_EXACT_MEMBERSHIP
    assert inferred["training_bound"]["advantage_bound"] == exact
    assert exact < declared.advantage
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(trained / "model.onnx", alone / "model.onnx")
    inferred = _audit(folder, alone / "model.onnx", tmp_path / "alone.json", "sex")
    assert inferred["training_bound"]["source"] == FROM_DP
    assert inferred["training_bound"]["advantage_bound"] == pytest.approx(declared.advantage)


def test_a_record_for_other_files_or_a_broken_bound(trained: Path, tmp_path: Path) -> None:
    record = json.loads((trained / "training.json").read_text())
    (tmp_path / "model.onnx").write_bytes(b"")
    record["files"] = {"onnx": "other.onnx"}
    (tmp_path / "training.json").write_text(json.dumps(record))
    assert tracked_bound(tmp_path / "model.onnx", "sex") is None
    record["files"] = {"onnx": "model.onnx"}
    record["privacy"]["bayes_security"]["add_remove"]["advantage_exact"] = None
    (tmp_path / "training.json").write_text(json.dumps(record))
    assert tracked_bound(tmp_path / "model.onnx", "race") is None
    record["files"] = {"onnx": "model.onnx"}
    record["attribute_inference"]["bound"]["advantage_bound"] = 1.5
    (tmp_path / "training.json").write_text(json.dumps(record))
    with pytest.raises(InputFileError, match=r"advantage_bound in \[0, 1\]\. Found 1\.5\.$"):
        tracked_bound(tmp_path / "model.onnx", "sex")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--attribute", "zip"), "--attribute must name a feature the model reads (age, "),
        (("--attribute", "income"), "not the label. Found 'income'."),
        (
            ("--attribute", "sex", "--features", "age,education-num"),
            "must name a feature the model reads (age, education-num). Found 'sex'.",
        ),
        (("--attribute", "one"), "must take at least two values to be inferred. Found only 3.0."),
        (("--attribute", "sex", "--models", "2"), "train it alone. Found --models 2."),
        (("--attribute", "sex", "--no-dp"), "--attribute needs DP-SGD"),
        (("--attribute", "sex", "--microbatches", "4"), "Found --microbatches 4."),
    ],
)
def test_bad_attributes_are_one_line_with_exit_2(
    folder: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: tuple[str, ...],
    message: str,
) -> None:
    import pandas as pd

    for side in ("train", "population"):
        frame = pd.read_csv(folder / f"{side}.csv")
        frame.assign(one=3).to_csv(tmp_path / f"{side}.csv", index=False)
    private = [] if "--no-dp" in extra else ["--noise-multiplier", "1"]
    argv = _train(tmp_path, tmp_path / "m", *private, *[e for e in extra if e != "--no-dp"])
    code = main(argv)
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    assert len(err.strip().splitlines()) == 1, err
    assert message in err
    assert not (tmp_path / "m").exists()
