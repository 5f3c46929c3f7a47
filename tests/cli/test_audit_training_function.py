"""``epsstar audit-training --function module:fit``: the same audit as ``--command`` running the
same training as a script, its module imported once per worker process, and bad functions
refused in one line (exit 2, no file written)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from epsstar.cli.exit_codes import EXIT_GATE_FAILED, EXIT_USAGE

ROOT = Path(__file__).resolve().parents[2]

#: A trainer as a module: fit(train_path, out_dir, seed) saves one .skops model; importing the
#: module appends a line to imports.log beside it, so a test can count the imports.
MODULE = """
from pathlib import Path

import pandas as pd
import skops.io
from sklearn.tree import DecisionTreeClassifier

with open(Path(__file__).with_name("imports.log"), "a", encoding="utf-8") as log:
    log.write("imported\\n")


def fit(train_path, out_dir, seed):
    frame = pd.read_csv(train_path)
    model = DecisionTreeClassifier(random_state=seed)
    model.fit(frame.drop(columns="label"), frame["label"])
    skops.io.dump(model, Path(out_dir) / "model.skops")


def broken(train_path, out_dir, seed):
    raise ValueError("no data today\\nsecond line")


not_callable = 3
"""

#: The same training as a script, for --command.
SCRIPT = """
import sys
from fitmod import fit

fit(sys.argv[1], sys.argv[2], int(sys.argv[3]))
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Random labels: a tree that remembers its records fits the members only."""
    where = tmp_path_factory.mktemp("function")
    rng = np.random.default_rng(0)
    for name, n in (("train", 200), ("population", 600)):
        frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
        frame["label"] = rng.integers(0, 2, size=n)
        frame.to_csv(where / f"{name}.csv", index=False)
    (where / "fitmod.py").write_text(MODULE, encoding="utf-8")
    (where / "fit_script.py").write_text(SCRIPT, encoding="utf-8")
    return where


def _audit(folder: Path, out: str, *options: str) -> subprocess.CompletedProcess[str]:
    """The command line in ``folder`` (the working folder is on the function's import path)."""
    command = [
        sys.executable, "-m", "epsstar", "audit-training",
        "--train", "train.csv", "--population", "population.csv", "--label-column", "label",
        "--claimed-epsilon", "1", "--json", out, "--quiet", *options,
    ]  # fmt: skip
    environment = {"PYTHONPATH": str(ROOT), "PATH": str(Path(sys.executable).parent)}
    return subprocess.run(
        command, cwd=folder, capture_output=True, text=True, env=environment, check=False
    )


def test_a_function_gives_the_audit_of_the_same_training_as_a_command(folder: Path) -> None:
    function = _audit(folder, "function.json", "--function", "fitmod:fit", "--canaries", "300")
    script = f"{sys.executable} fit_script.py {{train}} {{out}} {{seed}}"
    command = _audit(folder, "command.json", "--command", script, "--canaries", "300")
    assert function.returncode == command.returncode, function.stderr + command.stderr
    assert function.returncode in (0, EXIT_GATE_FAILED), function.stderr
    by_function = json.loads((folder / "function.json").read_text(encoding="utf-8"))
    by_command = json.loads((folder / "command.json").read_text(encoding="utf-8"))
    assert by_function["procedure"] == {
        "kind": "function",
        "function": "fitmod:fit",
        "loader": None,
        "outputs": None,
    }
    for key in ("epsilon_lower_bound", "refuted", "verdict", "seeds"):
        assert by_function[key] == by_command[key], key
    (one,) = by_function["threat_models"]
    assert one["scores"] == by_command["threat_models"][0]["scores"]


def test_many_runs_import_the_module_once_in_each_worker(folder: Path) -> None:
    log = folder / "imports.log"
    log.unlink(missing_ok=True)
    done = _audit(
        folder, "many.json", "--function", "fitmod:fit", "--runs", "40", "--jobs", "2",
        "--claimed-epsilon", "0.5",
    )  # fmt: skip
    assert done.returncode in (0, EXIT_GATE_FAILED), done.stderr
    runs = json.loads((folder / "many.json").read_text(encoding="utf-8"))["training_runs"]
    assert len(runs) == 80
    # once to check the name before any run, then once in each of the two workers
    assert log.read_text(encoding="utf-8").count("imported") <= 3


@pytest.mark.parametrize(
    ("function", "message"),
    [
        ("fitmod", "--function must name a function as package.module:name. Found 'fitmod'."),
        ("nosuch:fit", "--function's module 'nosuch' must import. Found ModuleNotFoundError"),
        ("fitmod:missing", "--function must name a function of 'fitmod'. Found no 'missing'"),
        ("fitmod:not_callable", "--function must name a callable. Found 'fitmod:not_callable'"),
        ("fitmod:broken", "--function fitmod:broken must train and save one model for run 1. "
         "Found ValueError: no data today"),
    ],
)  # fmt: skip
def test_a_bad_function_is_one_line_exit_2_and_writes_nothing(
    folder: Path, function: str, message: str
) -> None:
    done = _audit(folder, "bad.json", "--function", function, "--canaries", "300")
    assert done.returncode == EXIT_USAGE
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert message in lines[0]
    assert "second line" not in lines[0]
    assert not (folder / "bad.json").exists()


def test_a_command_and_a_function_together_are_refused(folder: Path) -> None:
    done = _audit(folder, "both.json", "--function", "fitmod:fit", "--command", "python x.py")
    assert done.returncode == EXIT_USAGE
    assert "takes --command or --function, not both" in done.stderr
