"""Every Python block of docs/python-api.md runs, in order, in a fresh folder and without a
warning: the page cannot show a call that no longer works."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[2] / "docs" / "python-api.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def test_the_page_has_its_example_and_its_reference() -> None:
    found = blocks()
    assert len(found) >= 4
    assert any("epsstar.audit(model, train, population" in block for block in found)


def test_every_python_block_of_the_page_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    for number, block in enumerate(blocks(), start=1):  # warnings fail the test: none expected
        exec(compile(block, f"{PAGE.name} block {number}", "exec"), namespace)
    printed = capsys.readouterr().out
    assert printed.startswith("Epsilon*: ")
    assert "\nverdict: " in printed
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "audit.html",
        "audit.json",
        "training-audit.json",
    ]
