"""One definition of Epsilon*: the same words in the help, README, report, docs and schemas."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from epsstar.statistics.definition import DEFINITION, RETIRED

ROOT = Path(__file__).resolve().parents[1]
# Where a reader learns what Epsilon* is; each must state the definition word for word.
DEFINING = (
    "README.md",
    "docs/reports.md",
    "reports/templates/audit.html.j2",
    "pyproject.toml",
)


def plain(text: str) -> str:
    """Markdown, HTML and line breaks removed: the words a reader sees."""
    text = html.unescape(text).replace("\\*", "*").replace("**", "")
    return " ".join(text.split())


@pytest.mark.parametrize("name", DEFINING)
def test_the_places_that_define_epsilon_star_use_the_definition(name: str) -> None:
    text = plain((ROOT / name).read_text(encoding="utf-8"))
    first = DEFINITION.split(". ")[0].removeprefix("Epsilon* is ")
    assert first in text, name
    if name != "pyproject.toml":  # one line of metadata: the first sentence only
        assert DEFINITION.split(". ", 1)[1].rstrip(".") in text, name


def test_help_states_the_definition() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "epsstar.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env={"COLUMNS": "200", "PYTHONPATH": str(ROOT), "PATH": ""},
    )
    assert DEFINITION in plain(done.stdout)


def test_the_schema_describes_epsilon_star_by_the_definition() -> None:
    schema = json.loads((ROOT / "epsstar/schemas/epsilon.schema.json").read_text())
    assert schema["$defs"]["result"]["properties"]["epsilon_star"]["description"] == DEFINITION


def shipped_text() -> list[Path]:
    """Every tracked text a user or a developer reads (golden outputs are regenerated)."""
    done = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        pytest.skip("not a git checkout")
    suffixes = {".md", ".py", ".j2", ".json", ".toml", ".txt"}
    return [
        ROOT / name
        for name in done.stdout.splitlines()
        if Path(name).suffix in suffixes
        and not name.startswith("tests/golden/expected/")
        and name != "epsstar/statistics/definition.py"
    ]


def test_no_retired_phrase_is_left() -> None:
    found = [
        f"{path.relative_to(ROOT)}: {phrase!r}"
        for path in shipped_text()
        if path.is_file()
        for phrase in RETIRED
        if re.search(re.escape(phrase) + r"\b", plain(path.read_text(errors="replace")), re.I)
    ]
    assert not found
