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


def tracked() -> list[str]:
    """The paths git tracks, relative to the repository's root."""
    done = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        pytest.skip("not a git checkout")
    return done.stdout.splitlines()


def shipped_text() -> list[Path]:
    """Every tracked text a user or a developer reads (golden outputs are regenerated)."""
    suffixes = {".md", ".py", ".j2", ".json", ".toml", ".txt"}
    return [
        ROOT / name
        for name in tracked()
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


# A paper cited by a file that only a developer's machine holds: a hyphenated name ending in
# its year (and maybe more words), a guide's section, a lecture's notes or a folder of papers.
CITED_FILE = re.compile(
    r"[a-z0-9-]+-(?:19|20)[0-9]{2}[a-z-]*\.(?:md|txt)|GUIDE\.md|shared/papers"
    r"|gdp-and-auditing-lecture"
)


def cited_files(text: str, real: set[str]) -> list[str]:
    """The file names ``text`` cites that are no path (or file name) of the repository."""
    return [name for name in CITED_FILE.findall(text) if name not in real]


@pytest.mark.parametrize(
    ("text", "cited"),
    [
        ("(eq. 7 of ``epsilon-star-negoescu-2024.md``)", ["epsilon-star-negoescu-2024.md"]),
        (
            "(adversary-instantiation-nasr-2021-excerpt.txt, eq. 5)",
            ["adversary-instantiation-nasr-2021-excerpt.txt"],
        ),
        ('Steinke et al. 2023 (GUIDE.md §2 "Auditing")', ["GUIDE.md"]),
        ("not in ``/work/shared/papers``", ["shared/papers"]),
        ("Prop. 2.5 in `gdp-and-auditing-lecture.md`", ["gdp-and-auditing-lecture"]),
        ("see notes-2024.md", []),
        ('Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine Learning Models"', []),
        ("fixtures/README.md and tests/golden/expected/train-dp/model__training.json", []),
    ],
)
def test_a_citation_by_file_name_is_found_unless_the_file_is_the_repository_s(
    text: str, cited: list[str]
) -> None:
    assert cited_files(text, {"notes-2024.md", "docs/notes-2024.md"}) == cited


def test_papers_are_cited_by_title_and_authors_never_by_a_file_the_repository_lacks() -> None:
    names = tracked()
    real = set(names) | {Path(name).name for name in names}
    found: list[str] = []
    for name in names:
        path = ROOT / name
        # This file spells the pattern out; links to folders and binary files hold no citation.
        if name == "tests/test_definition.py" or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue
        for number, line in enumerate(data.decode(errors="replace").splitlines(), start=1):
            found += [f"{name}:{number}: {cited}" for cited in cited_files(line, real)]
    assert not found
