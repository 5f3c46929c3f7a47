"""benchmarks/training_audit_designs.py prints its table: a row per design asked for, a cell per
trainer, ``n/a`` where the trainer takes no pretrained start."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.benchmarks_.scripts import imported

PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "training_audit_designs.py"


def test_one_row_of_the_logistic_regression_is_printed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = imported(PATH, "training_audit_designs_bench")
    monkeypatch.setattr(bench, "CANARIES", 200)
    chosen = ["crafted d = 1, 2 copies", "input, pretrained start"]
    arguments = ["x", "--seeds", "1", "--trainers", "logistic", "--designs", *chosen]
    monkeypatch.setattr(sys, "argv", arguments)
    bench.main()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("one run, 200 canaries, claim epsilon = 1")
    assert lines[2] == "| design | logistic | s per audit |"
    crafted = lines[4].split(" | ")
    assert crafted[0] == "| crafted d = 1, 2 copies"
    bound, gdp = crafted[1].split(" (")
    assert float(bound) >= 0.0
    assert float(gdp.rstrip(")")) >= 0.0
    assert lines[5] == "| input, pretrained start | n/a | – |"
