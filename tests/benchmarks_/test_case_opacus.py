"""The parts of benchmarks/case_opacus.py: the claim it reads from opacus, and its trainers.

The audits themselves take minutes (the script's own run); here each trainer trains once on
two records and saves a model that epsstar reads, and the normalisers are the ones the case
study is about: opacus divides by the data set's length, the plain loop by a constant.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pandas as pd
import pytest

from tests.benchmarks_.scripts import imported

pytest.importorskip("opacus")
torch = pytest.importorskip("torch")

PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "case_opacus.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return imported(PATH, "case_opacus_bench")


def trainers(bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    for name, value in (("STEPS", "3"), ("SIGMA", "0.0"), ("OUTPUTS", "3"), ("TRAINER", "x")):
        monkeypatch.setenv(f"CASE_{name}", value)
    path = tmp_path / "case_fit.py"
    path.write_text(bench.MODULE, "utf-8")
    return imported(path, "case_fit_for_test")


def test_the_claim_is_what_opacus_reports_for_its_noise(bench: ModuleType) -> None:
    from opacus.accountants.utils import get_noise_multiplier

    sigma, claim = bench.opacus_claim(steps=50, target=1.0)
    assert sigma == get_noise_multiplier(
        target_epsilon=1.0, target_delta=1e-5, sample_rate=1.0, steps=50, accountant="rdp"
    )
    # opacus's search stops at or below the target, within its step of 0.01 in sigma.
    assert 0.95 < claim <= 1.0


@pytest.mark.parametrize("records", [2, 3])
def test_without_noise_opacus_divides_by_the_length_and_the_loop_by_a_constant(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, records: int
) -> None:
    fit = trainers(bench, tmp_path, monkeypatch)
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]][:records])
    y = torch.tensor([0, 1, 2][:records])
    moved = {}
    for name, train in (("opacus", fit.with_opacus), ("fixed", fit.with_fixed_normaliser)):
        torch.manual_seed(0)
        model = torch.nn.Linear(2, 3)
        start = [p.detach().clone() for p in model.parameters()]
        monkeypatch.setattr(fit, "STEPS", 1)
        train(model, x, y)
        moved[name] = [p.detach() - s for p, s in zip(model.parameters(), start, strict=True)]
    # One noiseless step of the same clipped sum: opacus over n records, the loop over 2.
    for by_opacus, by_loop in zip(moved["opacus"], moved["fixed"], strict=True):
        torch.testing.assert_close(by_opacus * records, by_loop * 2, rtol=1e-5, atol=1e-6)


def test_each_trainer_saves_a_model_that_epsstar_reads(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from epsstar.audit.model.loading import ModelFile

    fit = trainers(bench, tmp_path, monkeypatch)
    train = tmp_path / "train.csv"
    pd.DataFrame({"x0": [0.5, -1.0], "x1": [1.0, 0.2], "label": [0, 2]}).to_csv(train, index=False)
    for name in ("opacus", "fixed"):
        monkeypatch.setattr(fit, "TRAINER", name)
        out = tmp_path / name
        out.mkdir()
        fit.fit(str(train), str(out), 0)
        loaded = ModelFile.of(out / "model.pt", trust=True).load()
        assert loaded.loader.name == "torchscript"
