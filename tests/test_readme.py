"""The README's commands and figures stay true."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_ci_runs_the_readme_test_command() -> None:
    command = re.search(r"```bash\n(python -m pip install -e .*pytest)\n```", README)
    assert command is not None
    assert command.group(1) in (ROOT / ".ci" / "run").read_text()


def test_the_epsilon_example_prints_what_the_readme_shows() -> None:
    block = re.search(r"```console\n\$ (epsstar epsilon .*?)\n(Epsilon\* = .*?)\n```", README, re.S)
    assert block is not None
    command = block.group(1).replace("\\\n", " ").split()
    shown = [line for line in block.group(2).splitlines() if "JSON written" not in line]
    args = [a for a in command[1:] if a not in ("--json", "result.json")]
    done = subprocess.run(
        [sys.executable, "-m", "epsstar.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    assert done.stdout.splitlines() == shown
