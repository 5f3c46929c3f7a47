"""``epsstar sweep``: the grid, the manifest and resuming after a kill."""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from epsstar.cli import main
from epsstar.exceptions import InvalidInputError
from epsstar.training.runs.sweep import (
    MANIFEST_COLUMNS,
    SweepCompute,
    load_sweep_config,
    run_sweep,
)

CONFIG = """
data = "{train}"
label_column = "label"
population = "{population}"
repeats = 2
seed = 10

[model]
hidden = [6]

[baseline]
epochs = [1, 2]
batch_size = 50

[dp]
target_epsilons = [2]
clips = [1, 0.5]
batch_sizes = [50]
microbatches = ["per-example", 5]
epochs = 1
"""


@pytest.fixture
def config_file(csv_files: tuple[Path, Path], tmp_path: Path) -> Path:
    path = tmp_path / "sweep.toml"
    path.write_text(CONFIG.format(train=csv_files[0], population=csv_files[1]))
    return path


def _snapshot(root: Path) -> dict[str, tuple[int, str]]:
    return {
        str(p.relative_to(root)): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in root.rglob("*")
        if p.is_file() and p.name != "manifest.csv"
    }


def test_grid_labels(config_file: Path) -> None:
    config = load_sweep_config(config_file)
    labels = [s.label for s in config.strategies]
    assert labels == [
        "nonprivate-e1",
        "nonprivate-e2",
        "dp-eps2-C1-B50-mex-e1",
        "dp-eps2-C1-B50-m5-e1",
        "dp-eps2-C0.5-B50-mex-e1",
        "dp-eps2-C0.5-B50-m5-e1",
    ]


@pytest.mark.slow
def test_sweep_resumes_without_touching_finished_models(config_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "models"
    config = load_sweep_config(config_file)
    finished: list[str] = []

    def interrupt_after_five(message: str) -> None:
        if "done in" not in message:
            return  # a noise multiplier search starting
        finished.append(message)
        if len(finished) == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(config, out, progress=False, log=interrupt_after_five)
    # A model that was being written when the process died: files but no training.json.
    partial = out / "dp-eps2-C1-B50-m5-e1" / "1"
    partial.mkdir(parents=True)
    (partial / "model.onnx").write_bytes(b"truncated")
    before = _snapshot(out)
    with (out / "manifest.csv").open() as stream:
        assert len(list(csv.DictReader(stream))) == 5
    outcome = run_sweep(config, out, progress=False)
    assert (outcome.trained, outcome.skipped) == (7, 5)
    after = _snapshot(out)
    unfinished = "dp-eps2-C1-B50-m5-e1/1/"
    for name, state in before.items():
        if not name.startswith(unfinished):
            assert after[name] == state, name  # finished models untouched (mtime and hash)
    assert after[unfinished + "model.onnx"] != before[unfinished + "model.onnx"]
    assert (partial / "training.json").is_file()
    with (out / "manifest.csv").open() as stream:
        rows = list(csv.DictReader(stream))
    assert len(rows) == 12
    assert tuple(rows[0]) == MANIFEST_COLUMNS
    assert all((out / row["model"]).is_file() for row in rows)
    assert {row["seed"] for row in rows} == {"10", "11"}
    assert {row["features"] for row in rows} == {""}
    dp_rows = [row for row in rows if row["private"] == "True"]
    assert all(float(row["epsilon"]) <= 2 for row in dp_rows)
    assert {row["microbatches"] for row in dp_rows} == {"", "5"}
    # A third run has nothing to do.
    again = run_sweep(config, out, progress=False)
    assert (again.trained, again.skipped) == (0, 12)
    assert _snapshot(out) == after


@pytest.mark.slow
def test_sweep_cli(
    config_file: Path, tmp_path: Path, validate_json: Callable[[str, Any], None]
) -> None:
    small = (
        config_file.read_text()
        .replace("repeats = 2", "repeats = 1")
        .replace("clips = [1, 0.5]", "clips = [1]")
    )
    config_file.write_text(small)
    assert main(["sweep", str(config_file), "--out", str(tmp_path / "o"), "--quiet"]) == 0
    with (tmp_path / "o" / "manifest.csv").open() as stream:
        assert len(list(csv.DictReader(stream))) == 4
    records = sorted((tmp_path / "o").glob("*/0/training.json"))
    assert len(records) == 4
    for record in records:
        validate_json("training", json.loads(record.read_text(encoding="utf-8")))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("[dp]", "[dp]\ncolour = 1"), "dp has no key 'colour' (allowed: accountant, "),
        (('label_column = "label"', ""), "missing label_column. Found keys 'data'"),
        (("clips = [1, 0.5]", "clips = ['a']"), "dp.clips[0] must be a finite number from 0"),
        (('microbatches = ["per-example", 5]', "microbatches = [0]"), "dp.microbatches[0] must be"),
        (("repeats = 2", "repeats = 0"), "repeats must be an integer ≥ 1. Found 0."),
        (("[dp]", "[dp]\nmax_noise_multiplier = 'x'"), "max_noise_multiplier must be a finite"),
        (("[dp]", "[dp]\ndelta = [1e-5]"), "dp.delta must be a finite number from 0 to 1 (above"),
        (("[dp]", "[dp]\naccountant = 5"), "dp.accountant must be one of 'pld', 'rdp'. Found 5."),
        (("hidden = [6]", "hidden = [6]\nlr = true"), "model.lr must be a finite number from 0"),
    ],
)
def test_bad_config(config_file: Path, edit: tuple[str, str], message: str) -> None:
    config_file.write_text(config_file.read_text().replace(*edit))
    with pytest.raises(InvalidInputError, match=re.escape(message)):
        load_sweep_config(config_file)


def test_bad_config_via_cli(
    config_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sweep", str(tmp_path / "nope.toml"), "--out", str(tmp_path / "o")]) == 2
    assert "sweep config does not exist" in capsys.readouterr().err
    assert main(["sweep", str(config_file)]) == 2
    assert "needs an output directory" in capsys.readouterr().err


def _numbers(record: Any) -> list[float]:
    """Every number in a JSON value, in order (for a comparison with a tolerance)."""
    if isinstance(record, dict):
        return [x for key in sorted(record) for x in _numbers(record[key])]
    if isinstance(record, list):
        return [x for item in record for x in _numbers(item)]
    return [float(record)] if isinstance(record, int | float) and record is not True else []


@pytest.mark.slow
def test_a_stacked_sweep_trains_the_models_of_the_plain_sweep(
    config_file: Path, tmp_path: Path
) -> None:
    """``stack`` 12: the grid's models trained four stacks at a time (baselines of 1 and 2
    epochs, DP per example and with microbatches) are those of the one-at-a-time sweep."""
    config = load_sweep_config(config_file)
    stacked = run_sweep(
        config, tmp_path / "stacked", progress=False, compute=SweepCompute(stack=12)
    )
    plain = run_sweep(config, tmp_path / "plain", progress=False)
    assert (stacked.trained, plain.trained) == (12, 12)
    records = sorted((tmp_path / "plain").glob("*/*/training.json"))
    assert len(records) == 12
    for record in records:
        expected = json.loads(record.read_text())
        got_path = tmp_path / "stacked" / record.relative_to(tmp_path / "plain")
        got = json.loads(got_path.read_text())
        for value in (got, expected):
            value.pop("wall_time_seconds")
            for stats in value["history"]:
                stats.pop("seconds")
        assert got["fingerprint"] == expected["fingerprint"]
        assert got["privacy"] == expected["privacy"]
        # losses and utilities of float32 weights equal up to summation order
        assert _numbers(got) == pytest.approx(_numbers(expected), rel=1e-5, abs=1e-7)
    again = run_sweep(config, tmp_path / "stacked", progress=False, compute=SweepCompute(stack=12))
    assert (again.trained, again.skipped) == (0, 12)
