"""Every fenced code block of the README and of the guides it leads to runs as written and
prints what the page shows.

The blocks are read from the pages themselves (:data:`PAGES`), so a section added later is
checked too:

- ``console`` blocks: each ``$ `` command runs in a temporary copy of ``fixtures/``; the
  lines under it are what the terminal shows (standard output and error together), and
  must be printed exactly. The exit code is 1 when the shown output says ``[FAIL``, else 0.
- ``bash`` and ``python`` blocks run as scripts in such a copy and must exit 0.
- a ``text`` or ``json`` block after one of those, in the same section, is (part of) its
  output: every line of a ``text`` block appears in the printed lines, in order; a ``json``
  block is an abridged copy of the JSON printed (every value it shows, keys named ``...``
  left out). Numbers compare exactly unless the block's info string says
  ``tolerance=X`` (numbers that differ from machine to machine), and then the paragraph
  above the block must say so with the same X.
- a block opts out only with a visible first line ``# not run by tests/test_readme.py: WHY``.

A block that reads ``epsstar-demo/`` gets the demo's two data files (what ``epsstar demo``
writes first, without training its 35 models).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
#: The pages whose examples run: the README and the guides its examples continue in.
PAGES = ("README.md", "docs/audit.md", "docs/models.md", "docs/epsilon-from-losses.md")
OPT_OUT = "# not run by tests/test_readme.py: "
RUNNABLE = ("console", "bash", "python")
OUTPUTS = ("text", "json")
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced block: its language, info-string options, text, line and section."""

    language: str
    options: dict[str, str]
    body: str
    line: int
    section: str
    paragraph: str  # the prose just above the block
    page: str = "README.md"


def read_blocks(text: str, page: str = "README.md") -> list[Block]:
    """The fenced blocks of a Markdown text, in order."""
    blocks: list[Block] = []
    lines = text.splitlines()
    section = ""
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("#"):
            section = line
        fence = re.match(r"^(`{3,})(.*)$", line)
        if fence is None:
            index += 1
            continue
        words = fence.group(2).split()
        end = index + 1
        while not lines[end].startswith(fence.group(1)):
            end += 1
        above = index
        while above > 0 and lines[above - 1].strip() == "":
            above -= 1
        start = above
        while start > 0 and lines[start - 1].strip() and not lines[start - 1].startswith("```"):
            start -= 1
        blocks.append(
            Block(
                language=words[0] if words else "",
                options=dict(word.split("=", 1) for word in words[1:] if "=" in word),
                body="\n".join(lines[index + 1 : end]) + "\n",
                line=index + 1,
                section=section,
                paragraph="\n".join(lines[start:above]),
                page=page,
            )
        )
        index = end + 1
    return blocks


BLOCKS = [
    block
    for page in PAGES
    for block in read_blocks((ROOT / page).read_text(encoding="utf-8"), page)
]


@dataclass(frozen=True, slots=True)
class Case:
    """A runnable block and the output blocks that show what it prints."""

    block: Block
    outputs: tuple[Block, ...]

    @property
    def name(self) -> str:
        page = Path(self.block.page).stem
        return f"{page}-line-{self.block.line}-{self.block.language}"


def cases() -> list[Case]:
    found: list[Case] = []
    for block in BLOCKS:
        if block.language in RUNNABLE:
            found.append(Case(block, ()))
        elif (
            block.language in OUTPUTS
            and found
            and (found[-1].block.page, found[-1].block.section) == (block.page, block.section)
        ):
            found[-1] = Case(found[-1].block, (*found[-1].outputs, block))
    return found


CASES = cases()


def test_every_block_is_code_or_output() -> None:
    """No untagged fences, no shell prompts outside console blocks, opt-outs give a reason."""
    for block in BLOCKS:
        where = f"{block.page} line {block.line}"
        assert block.language in RUNNABLE + OUTPUTS, f"{where}: tag the block ({block.language!r})"
        if block.body.startswith(OPT_OUT):
            reason = block.body.splitlines()[0].removeprefix(OPT_OUT)
            assert len(reason.split()) >= 3, f"{where}: say why the block is not run"
        if "tolerance" in block.options:
            tolerance = block.options["tolerance"]
            assert tolerance in block.paragraph, f"{where}: say the tolerance {tolerance} above"


def test_readme_has_the_examples_a_newcomer_runs_first() -> None:
    run = [
        case.block
        for case in CASES
        if case.block.page == "README.md" and not case.block.body.startswith(OPT_OUT)
    ]
    commands = " ".join(block.body for block in run)
    for example in ("epsstar audit", "epsstar epsilon", "epsilon_star(", "audit("):
        assert example in commands
    assert sum(block.language == "console" for block in run) >= 2


def test_readme_is_a_front_page_that_leads_to_every_guide() -> None:
    """At most 250 lines (what it is, install, the main commands, where to read on), and
    every page of docs/ is reachable from it."""
    assert len(README.splitlines()) <= 250
    linked = set(re.findall(r"\]\((docs/[a-z0-9-]+\.md)", README))
    assert linked == {str(path.relative_to(ROOT)) for path in (ROOT / "docs").glob("*.md")}


def test_ci_runs_the_readme_test_command() -> None:
    """The README's line that installs and runs the tests (which may first install torch:
    tests/test_torch_range.py) is, whole, part of what .ci/run runs."""
    command = re.search(r"```bash\n(?:#[^\n]*\n)*(python -m pip install .*pytest)\n```", README)
    assert command is not None
    assert command.group(1) in (ROOT / ".ci" / "run").read_text()


def test_subpackages_are_attributes_after_import_epsstar() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import epsstar; print(epsstar.reports.render.__name__)"],
        capture_output=True,
        text=True,
        env=environment(),
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "render\n"), done.stderr


def environment() -> dict[str, str]:
    """This checkout first on the path; output unbuffered so that stdout and stderr interleave."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    scripts = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "PYTHONPATH": path,
        "PATH": scripts + os.pathsep + os.environ.get("PATH", ""),
        "PYTHONUNBUFFERED": "1",
        "COLUMNS": "100",
    }


def same_numbers(shown: str, printed: str, tolerance: float) -> bool:
    """Equal text, and numbers equal within ``tolerance`` (absolute)."""
    if NUMBER.split(shown) != NUMBER.split(printed):
        return False
    pairs = zip(NUMBER.findall(shown), NUMBER.findall(printed), strict=True)
    return all(
        math.isclose(float(a.replace(",", "")), float(b.replace(",", "")), abs_tol=tolerance)
        for a, b in pairs
    )


def shows_lines(shown: str, printed: list[str], tolerance: float) -> bool:
    """Every non-empty line of ``shown`` is a printed line, in order."""
    position = 0
    for line in filter(str.strip, shown.splitlines()):
        while position < len(printed) and not same_numbers(line, printed[position], tolerance):
            position += 1
        if position == len(printed):
            return False
        position += 1
    return True


def shows_json(shown: object, printed: object, tolerance: float) -> bool:
    """``shown`` is ``printed`` abridged: each value it holds, keys named ``...`` aside."""
    if isinstance(shown, dict):
        return isinstance(printed, dict) and all(
            key == "..." or (key in printed and shows_json(value, printed[key], tolerance))
            for key, value in shown.items()
        )
    if isinstance(shown, list):
        return (
            isinstance(printed, list)
            and len(shown) == len(printed)
            and all(shows_json(a, b, tolerance) for a, b in zip(shown, printed, strict=True))
        )
    if isinstance(shown, float) and isinstance(printed, float):
        return math.isclose(shown, printed, rel_tol=1e-9, abs_tol=tolerance)
    return shown == printed


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A temporary working folder holding a copy of the fixtures, as in a fresh clone."""
    shutil.copytree(ROOT / "fixtures", tmp_path / "fixtures")
    return tmp_path


def demo_data(folder: Path) -> None:
    """What ``epsstar demo`` writes before it trains: ``epsstar-demo/data/*.parquet``."""
    from epsstar.training.data.datasets import adult

    adult().write_parquet(folder / "epsstar-demo" / "data")


def run(command: list[str], folder: Path, stdin: str | None = None) -> tuple[int, str]:
    done = subprocess.run(
        command,
        input=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=folder,
        env=environment(),
        check=False,
        timeout=1200,
    )
    return done.returncode, done.stdout


def run_console(block: Block, folder: Path) -> None:
    """Each ``$`` command prints exactly the lines under it."""
    steps = re.split(r"^\$ ", block.body, flags=re.M)[1:]
    for step in steps:
        lines = step.splitlines()
        command = lines.pop(0)
        while command.endswith("\\"):
            command = command[:-1] + " " + lines.pop(0)
        code, printed = run(["bash", "-c", command], folder)
        assert printed.splitlines() == lines, f"$ {command}\n{printed}"
        assert code == (1 if any("[FAIL" in line for line in lines) else 0), printed


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_block_runs_as_written(case: Case, folder: Path) -> None:
    block = case.block
    if block.body.startswith(OPT_OUT):
        pytest.skip(block.body.splitlines()[0].removeprefix(OPT_OUT))
    if "epsstar-demo/" in block.body:
        demo_data(folder)
    if block.language == "console":
        run_console(block, folder)
        return
    interpreter = ["bash", "-e", "-o", "pipefail"] if block.language == "bash" else [sys.executable]
    code, printed = run([*interpreter, "-"], folder, stdin=block.body)
    assert code == 0, printed
    for output in case.outputs:
        tolerance = float(output.options.get("tolerance", "0"))
        where = f"{output.page} line {output.line}"
        if output.language == "json":
            start = printed.index("{")
            document = json.JSONDecoder().raw_decode(printed[start:])[0]
            assert shows_json(json.loads(output.body), document, tolerance), where
        else:
            assert shows_lines(output.body, printed.splitlines(), tolerance), (
                f"{where} is not in what the block printed:\n{printed}"
            )
