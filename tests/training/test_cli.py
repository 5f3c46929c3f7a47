"""``epsstar train`` end to end, and its one-line errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from epsstar.cli import main


def _train(csv_files: tuple[Path, Path], out: Path, *extra: str) -> list[str]:
    return [
        "train",
        "--data",
        str(csv_files[0]),
        "--label-column",
        "label",
        "--epochs",
        "2",
        "--out",
        str(out),
        "--quiet",
        *extra,
    ]


@pytest.mark.slow
def test_train_writes_a_model_directory(
    csv_files: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    validate_json: Callable[[str, Any], None],
) -> None:
    out = tmp_path / "dp"
    code = main(
        [
            *_train(
                csv_files,
                out,
                "--population",
                str(csv_files[1]),
                "--target-epsilon",
                "2",
                "--hidden",
                "8,8",
                "--batch-size",
                "50",
                "--clip",
                "0.5",
                "--seed",
                "3",
            )
        ]
    )
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["model.onnx", "model.pt", "training.json"]
    record = json.loads((out / "training.json").read_text())
    validate_json("training", record)
    assert record["kind"] == "dp-sgd"
    assert record["privacy"]["epsilon"] <= 2
    assert record["privacy"]["clip"] == 0.5
    assert record["model"]["hidden"] == [8, 8]
    assert record["hyperparameters"]["seed"] == 3
    assert record["data"]["classes"] == ["no", "yes"]
    assert record["utility"]["population"]["n_records"] == 500
    assert capsys.readouterr().out == ""  # --quiet


def test_train_summary_without_quiet(
    csv_files: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    validate_json: Callable[[str, Any], None],
) -> None:
    argv = [a for a in _train(csv_files, tmp_path / "plain") if a != "--quiet"]
    assert main(argv) == 0
    record = json.loads((tmp_path / "plain" / "training.json").read_text())
    validate_json("training", record)
    assert record["privacy"] is None
    out = capsys.readouterr().out
    assert "non-private logistic regression" in out
    assert "train: accuracy" in out


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"--data": "missing.csv"}, "data file must exist and be a file"),
        ({"--label-column": "nope"}, "label column 'nope' must be one of its columns"),
        ({"--batch-size": "5000"}, "--batch-size must be at most the number of training records"),
        (
            {
                "--target-epsilon": "0.001",
                "--max-noise-multiplier": "5",
                "--standardise-on": "data",
            },
            "cannot be reached",
        ),
        (
            {"--target-epsilon": "1"},
            "DP training standardises its features on public data, never on the private "
            "training records: give a population table (--population), or say --standardise-on "
            "data (outside the guarantee) or none. Found neither.",
        ),
        ({"--standardise-on": "population"}, "--standardise-on population needs a population"),
        ({"--hidden": "10,x"}, "--hidden must be comma-separated positive integers"),
        ({"--delta": "0.9", "--target-epsilon": "1"}, "delta must be in"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    csv_files: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: dict[str, str],
    message: str,
) -> None:
    argv = _train(csv_files, tmp_path / "out")
    for option, value in change.items():
        if option in argv:
            argv[argv.index(option) + 1] = value
        else:
            argv += [option, value]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1
    assert err.startswith("epsstar train: error: ")
    assert not (tmp_path / "out").exists()  # nothing is created on bad input


def test_refuses_non_empty_output_unless_overwrite(
    csv_files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "m"
    assert main(_train(csv_files, out)) == 0
    assert main(_train(csv_files, out)) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main([*_train(csv_files, out), "--overwrite"]) == 0
