"""Output locations an unprivileged user may not use: one line, exit 2, nothing written.

Every command that writes is run, as a user without privileges, with each of its outputs
in a folder it may not search (mode 000: even asking whether a path inside exists fails)
and in a folder it may not create (inside a read-only one). Each run must end before any
work with exit code 2 and one line naming the option, the reason and the path given, and
must leave the folders as they were.

Run as root, the commands run under ``setpriv`` with every capability dropped: root
without ``CAP_DAC_OVERRIDE`` is bound by the folders' permissions as any user is (running
as another user, ``setpriv --reuid``, would also need the interpreter and ``tmp_path``
readable by that user, which pytest's folders are not). Run as another user already, the
commands run as that user.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from epsstar.cli.exit_codes import EXIT_USAGE

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "fixtures" / "models"
LOSSES = ROOT / "fixtures" / "losses"

AUDIT = [
    "audit",
    "binary_logreg.onnx",
    *("--train", "binary_train.csv", "--population", "binary_population.csv"),
    *("--label-column", "label", "--quiet", "--method", "empirical"),
]
TRAINING = ["--data", "binary_train.csv", "--label-column", "label", "--quiet"]
AUDIT_TRAINING = [
    "audit-training",
    *("--train", "binary_train.csv", "--population", "binary_population.csv"),
    *("--label-column", "label", "--quiet", "--epochs", "1", "--canaries", "100"),
]

#: (command line before the output option, the output option, the name given in the folder).
#: ``$GITHUB_STEP_SUMMARY`` is the environment variable, not an option.
WRITERS: dict[str, tuple[list[str], str, str]] = {
    "audit --json": (AUDIT, "--json", "a.json"),
    "audit --report": (AUDIT, "--report", "a.html"),
    "audit --junit-xml": (AUDIT, "--junit-xml", "a.xml"),
    "audit $GITHUB_STEP_SUMMARY": (AUDIT, "$GITHUB_STEP_SUMMARY", "summary.md"),
    "audit-many --json": (["audit-many", "manifest.csv", "--quiet"], "--json", "m.json"),
    "audit-many --reports": (["audit-many", "manifest.csv", "--quiet"], "--reports", "reports"),
    "audit-many --junit-xml": (["audit-many", "manifest.csv", "--quiet"], "--junit-xml", "m.xml"),
    "epsilon --json": (
        ["epsilon", "--train-losses", "train.npy", "--population-losses", "population.npy"],
        "--json",
        "e.json",
    ),
    "landscape --out": (["landscape", "results.json"], "--out", "l.html"),
    "train --out": (["train", *TRAINING, "--epochs", "1"], "--out", "model"),
    "references --out": (["references", *TRAINING, "--count", "1"], "--out", "refs"),
    "sweep --out": (["sweep", "sweep.toml", "--quiet"], "--out", "sweep"),
    "demo --out": (["demo", "--quick", "--quiet"], "--out", "demo"),
    "audit-training --json": (AUDIT_TRAINING, "--json", "t.json"),
    "audit-training --report": (AUDIT_TRAINING, "--report", "t.html"),
    "audit-training --work": (AUDIT_TRAINING, "--work", "work"),
}

SWEEP = """
data = "binary_train.csv"
label_column = "label"
repeats = 1

[baseline]
epochs = [1]
batch_size = 50
"""


def _inputs(folder: Path) -> None:
    """Every file the commands read, in ``folder``."""
    for name in ("binary_logreg.onnx", "binary_train.csv", "binary_population.csv"):
        shutil.copy(MODELS / name, folder / name)
    for name in ("train.npy", "population.npy"):
        shutil.copy(LOSSES / name, folder / name)
    (folder / "manifest.csv").write_text(
        "model,train,population,label_column\n"
        "binary_logreg.onnx,binary_train.csv,binary_population.csv,label\n"
    )
    utility = {"n": 10, "accuracy": 0.5, "auroc": 0.8}
    model = {
        "entry": {"strategy": "a", "repeat": 0, "params": {}},
        "result": {"epsilon_star": 1.0, "utility": {"population": utility}},
    }
    (folder / "results.json").write_text(json.dumps({"models": [model]}))
    (folder / "sweep.toml").write_text(SWEEP)


@pytest.fixture
def places(tmp_path: Path) -> Iterator[Path]:
    """``tmp_path`` with the inputs, a folder no one may search (``locked/sub``) and a
    read-only one (``readonly``); their modes are put back afterwards."""
    _inputs(tmp_path)
    (tmp_path / "locked" / "sub").mkdir(parents=True)
    (tmp_path / "readonly").mkdir()
    (tmp_path / "locked").chmod(0)
    (tmp_path / "readonly").chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP)
    yield tmp_path
    (tmp_path / "locked").chmod(0o755)
    (tmp_path / "readonly").chmod(0o755)


def _listing(folder: Path) -> list[str]:
    (folder / "locked").chmod(0o755)
    try:
        return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
    finally:
        (folder / "locked").chmod(0)


@pytest.mark.parametrize(
    ("where", "reason"),
    [("locked/sub", "cannot reach"), ("readonly/new", "cannot")],
    ids=["unsearchable", "not creatable"],
)
@pytest.mark.parametrize(("words", "option", "name"), WRITERS.values(), ids=WRITERS)
def test_an_output_the_user_may_not_write_is_one_line(
    as_user: list[str],
    places: Path,
    words: list[str],
    option: str,
    name: str,
    where: str,
    reason: str,
) -> None:
    before = _listing(places)
    shown = f"{where}/{name}"
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    environment.pop("GITHUB_STEP_SUMMARY", None)
    if option.startswith("$"):
        environment[option[1:]] = shown
        chosen = []
    else:
        chosen = [option, shown]
    done = subprocess.run(
        [*as_user, sys.executable, "-m", "epsstar.cli", *words, *chosen],
        cwd=places,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == EXIT_USAGE, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"epsstar {words[0]}: error: {option}: {reason}"), lines[0]
    assert "(Permission denied)" in lines[0]
    assert lines[0].endswith(f"Found {shown!r}.")
    assert _listing(places) == before
