"""benchmarks/training_audit_blackbox.py: its quick table, and the parts the table rests on.

The full table takes most of an hour (the script's own run); ``--quick`` audits a few small
rows once, through ``--function`` and ``--command``, which must give the same bounds.
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

from tests.benchmarks_.scripts import imported

torch = pytest.importorskip("torch")
pytest.importorskip("dp_accounting")

PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "training_audit_blackbox.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return imported(PATH, "training_audit_blackbox_bench")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_quick_table_has_every_rule_and_the_command_agrees_with_the_function(
    bench: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    bench.main(["--quick"])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    rows = [_cells(line) for line in lines[1:]]
    one_run = [row for row in rows if "canaries" in row[2]]
    assert {row[3] for row in one_run} == {"symmetric", "members-only", "nonmembers-only", "both"}
    by_design = {(row[0], row[2], row[3]): row[5] for row in one_run}
    for (name, design, rule), bounds in by_design.items():
        if "--command" in design:
            assert by_design[(name, design.replace(" (--command)", ""), rule)] == bounds
    many = [row for row in rows if "runs a side" in row[2]]
    assert [row[3] for row in many] == ["(many runs) (ε, δ)", "(many runs) μ-GDP"]
    assert {row[4] for row in many} == {"0/1"}  # the correct σ: nothing to refute


def test_sigma_is_the_accountants_for_the_claim(bench: ModuleType) -> None:
    sigma = bench.dp_sigma(1.0, 0.1, 50)
    assert 0.95 < bench.dp_epsilon(sigma, 0.1, 50) <= 1.0
    # calibrated for ten times the data, the same steps cost far more than claimed
    assert bench.dp_epsilon(bench.dp_sigma(1.0, 0.01, 50), 0.1, 50) > 2.0


@pytest.mark.parametrize("breakage", ["none", "clip-after-noise", "clip-batch-mean"])
def test_without_noise_one_record_moves_the_weights_by_what_its_clipping_allows(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, breakage: str
) -> None:
    # one full-batch step of lr 1 from zero weights on one far record: clipped per example
    # (and after the mean, for a batch of one) the step's norm is the clip; clipping after a
    # zero noise clips the sum divided by the normaliser, here 2: its norm is at most the clip
    x = [[40.0] + [0.0] * (bench.FEATURES - 1)]
    frame = pd.DataFrame(x, columns=[f"x{i}" for i in range(bench.FEATURES)])
    frame["label"] = [1]
    train = tmp_path / "train.csv"
    frame.to_csv(train, index=False)
    trainer = replace(
        bench.Trainer("dp-sgd", (), lr=1.0, rate=1.0, steps=1, batch=2.0, zero_init=True),
        breakage=breakage,
    )
    monkeypatch.setenv(bench.TRAINER_VARIABLE, json.dumps(asdict(trainer)))
    bench.fit(str(train), str(tmp_path), 0)
    model = torch.jit.load(str(tmp_path / "model.pt"))
    moved = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).norm().item()
    expected = {"none": 0.5, "clip-after-noise": 1.0, "clip-batch-mean": 1.0}[breakage]
    assert moved == pytest.approx(expected, rel=1e-5)
