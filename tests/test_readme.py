"""The README's commands and figures stay true."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
# A command (with "\\" continuation lines) followed by the output it prints.
EXAMPLES = re.findall(r"```console\n\$ (epsstar (?:[^\n]*\\\n)*[^\n]*)\n(.*?)\n```", README, re.S)


def test_ci_runs_the_readme_test_command() -> None:
    command = re.search(r"```bash\n(python -m pip install -e .*pytest)\n```", README)
    assert command is not None
    assert command.group(1) in (ROOT / ".ci" / "run").read_text()


def test_readme_has_examples() -> None:
    assert [command.split()[1] for command, _ in EXAMPLES] == ["audit", "epsilon", "epsilon"]


@pytest.mark.slow
@pytest.mark.parametrize(("command", "shown"), EXAMPLES, ids=[c.split()[1] for c, _ in EXAMPLES])
def test_examples_print_what_the_readme_shows(command: str, shown: str) -> None:
    words = command.replace("\\\n", " ").split()[1:]
    if "--json" in words:  # the example writes a file; the printed summary is what is compared
        index = words.index("--json")
        del words[index : index + 2]
    done = subprocess.run(
        [sys.executable, "-m", "epsstar.cli", *words],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    expected = [line for line in shown.splitlines() if "JSON written" not in line]
    assert done.stdout.splitlines() == expected
    exit_code = 1 if "[FAIL" in shown else 0
    assert done.returncode == exit_code
