"""``audit-training --command`` whose processes outlive it: a grandchild that leaves the
process group (``setsid``) and keeps standard error open, and children left running in the
background. The run must end within its ``--timeout`` (plus the time to stop what it left)
with one line, and no process it started may outlive it."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from epsstar.audit.training_audit.external.command import CommandTemplate, run_command
from epsstar.exceptions import InvalidInputError
from tests.hostile.bounded import run_cli

if not Path("/proc").is_dir():
    pytest.skip("processes that leave the group are found through /proc", allow_module_level=True)

#: Forks a child that calls setsid, keeps the inherited standard error open and sleeps;
#: both write their process ids, which the parent waits for. ``argv[1]``: the folder for the
#: ids; ``argv[2]``: ``wait`` (the parent sleeps too) or ``leave`` (it exits with success).
LEAVER = """
import os, sys, time
folder, mode = sys.argv[1], sys.argv[2]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:  # a grandchild in the background, in the new session
        open(os.path.join(folder, "grandchild"), "w").write(str(os.getpid()))
        time.sleep(300)
        os._exit(0)
    open(os.path.join(folder, "child"), "w").write(str(os.getpid()))
    sys.stderr.write("still here\\n")
    sys.stderr.flush()
    time.sleep(300)
    os._exit(0)
names = [os.path.join(folder, name) for name in ("child", "grandchild")]
while not all(os.path.isfile(name) and os.path.getsize(name) for name in names):
    time.sleep(0.01)
if mode == "wait":
    time.sleep(300)
"""


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped by its parent, does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return False
    state = next(line for line in status.splitlines() if line.startswith("State:"))
    return "zombie" not in state


def _ids(folder: Path) -> list[int]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        names = [folder / "child", folder / "grandchild"]
        if all(name.is_file() and name.read_text() for name in names):
            return [int(name.read_text()) for name in names]
        time.sleep(0.05)
    raise AssertionError("the command's children never started")


def _left_running(ids: list[int]) -> list[int]:
    deadline = time.monotonic() + 2  # killed processes vanish once their parent reaps them
    while time.monotonic() < deadline and any(_running(pid) for pid in ids):
        time.sleep(0.05)
    return [pid for pid in ids if _running(pid)]


def test_a_grandchild_that_left_the_group_cannot_hold_the_timeout(tmp_path: Path) -> None:
    (tmp_path / "leaver.py").write_text(LEAVER, encoding="utf-8")
    rng = np.random.default_rng(0)
    for name in ("train", "population"):
        frame = pd.DataFrame(rng.normal(size=(60, 3)), columns=["a", "b", "c"])
        frame["label"] = rng.integers(0, 2, size=60)
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    command = f"{sys.executable} {tmp_path / 'leaver.py'} {tmp_path} wait {{train}} {{out}}"
    out = tmp_path / "audit.json"
    finished = run_cli(
        [
            "audit-training", "--train", str(tmp_path / "train.csv"),
            "--population", str(tmp_path / "population.csv"), "--label-column", "label",
            "--command", command, "--timeout", "3", "--claimed-epsilon", "1",
            "--canaries", "20", "--json", str(out), "--quiet",
        ],
        seconds=120,
    )  # fmt: skip
    line = finished.one_line()
    assert finished.code == 2
    assert "did not finish within 3 s (--timeout)" in line
    # 3 s of timeout, the start of Python and the data's reading on a busy machine; before,
    # the run waited for the grandchild's standard error for as long as it slept
    assert finished.seconds < 60
    assert not _left_running(_ids(tmp_path))
    assert not out.exists()


@pytest.mark.parametrize("mode", ["leave", "wait"])
def test_no_process_a_run_started_outlives_it(mode: str, tmp_path: Path) -> None:
    (tmp_path / "leaver.py").write_text(LEAVER, encoding="utf-8")
    command = f"{sys.executable} {tmp_path / 'leaver.py'} {tmp_path} {mode} {{train}} {{out}}"
    template = CommandTemplate.parse(command, 5.0 if mode == "leave" else 2.0)
    started = time.monotonic()
    if mode == "leave":  # success, with two processes left in the background
        run_command(template, tmp_path / "train.csv", tmp_path, seed=0)
    else:
        with pytest.raises(InvalidInputError, match="within 2 s"):
            run_command(template, tmp_path / "train.csv", tmp_path, seed=0)
    assert time.monotonic() - started < 30
    assert not _left_running(_ids(tmp_path))
