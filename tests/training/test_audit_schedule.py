"""In an audit of epsstar's own trainer, every run follows one privacy plan, made for the rows of
``--train`` without canaries: runs with and without a canary share the sampling rate, the steps,
the normaliser and σ, and every run states the same claim, the accountant's ε for that plan.

Planned on each run's own table, a run on 2 records and a canary (3 rows) sampled at q = 2/3 for
twice the steps of the run without it (q = 1), with another σ: a schedule that tells whether the
canary is in, which refuted the trainer's own claim (ε ≥ 1.75 against 0.9998 over 300 runs a
side). Too few runs here to refute anything: these tests read the schedule every run records.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from epsstar.audit.training_audit.audit import TrainingAuditSetup, audit_training
from epsstar.cli import main
from epsstar.cli.exit_codes import EXIT_OK
from epsstar.training.threat_models import own_trainer
from epsstar.training.threat_models.observer import Mechanism
from epsstar.training.threat_models.own_trainer import OwnTrainer, parameter_count
from epsstar.training.trainer import TrainingConfig, plan_privacy

#: The schedule's entries every run shares (``records`` is what differs between the arms).
SHARED = ("sampling_rate", "steps", "update_normaliser", "noise_multiplier")


def _tables(folder: Path, train: int, population: int) -> tuple[Path, Path]:
    rng = np.random.default_rng(8)
    paths = folder / "train.csv", folder / "population.csv"
    for path, n in zip(paths, (train, population), strict=True):
        frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
        frame["label"] = np.arange(n) % 2
        frame.to_csv(path, index=False)
    return paths


def _same_schedule(runs: list[dict[str, Any]], base: int) -> dict[str, Any]:
    """Every run's schedule, checked to be one for both arms; the shared entries."""
    schedules = [run["model"]["schedule"] for run in runs]
    assert {run["arm"] for run in runs} == {"with", "without"}
    for run, schedule in zip(runs, schedules, strict=True):
        assert schedule["records"] == base + (run["arm"] == "with")
    shared = {key: schedules[0][key] for key in SHARED}
    assert [{key: s[key] for key in SHARED} for s in schedules] == [shared] * len(runs)
    return shared


def test_runs_with_and_without_a_canary_share_the_plan_and_the_claim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One run at a time, an input canary (a record) and the every-step adversary, whose
    model of the trainer (its mechanism) must be the plan's too."""
    train, population = _tables(tmp_path, 20, 60)
    config = TrainingConfig(epochs=2, batch_size=6, hidden=(4,), lr=0.5, noise_multiplier=8.0)
    mechanisms: list[Mechanism] = []
    observer = own_trainer.WhiteBoxObserver

    def watched(network: Any, mechanism: Mechanism, observed: Any) -> Any:
        mechanisms.append(mechanism)
        return observer(network, mechanism, observed)

    monkeypatch.setattr(own_trainer, "WhiteBoxObserver", watched)
    procedure = OwnTrainer(config, "label", parameter_count(3, 2, (4,)), population=str(population))
    setup = TrainingAuditSetup(
        train, population, "label", runs=14, threat_models=("input", "every-step"), seed=3
    )
    result = audit_training(procedure, setup).to_dict()
    runs = result["training_runs"]
    shared = _same_schedule(runs, 20)
    plan = plan_privacy(config, 20)
    assert plan is not None
    assert shared == {
        "sampling_rate": 6 / 20,
        "steps": plan.steps,
        "update_normaliser": plan.expected_batch_size,
        "noise_multiplier": 8.0,
    }
    claims = {json.dumps(run["claim"], sort_keys=True) for run in runs}
    assert len(claims) == 1
    assert result["claimed_epsilon"] == runs[0]["claim"]["epsilon"]
    assert result["claimed_epsilon"] == plan.epsilon_after(plan.steps)
    assert len(mechanisms) == len(runs)
    assert {(m.sampling_rate, m.normaliser, m.noise_std) for m in mechanisms} == {
        (plan.sampling_rate, plan.expected_batch_size, 8.0 * config.clip)
    }


def test_two_records_and_a_crafted_canary_take_one_schedule_in_and_out(tmp_path: Path) -> None:
    """The finding's settings through the command line (its runs stacked): with the canary
    the table holds 3 rows, without it 2, and both arms sample every row (q = 1), take 50 steps
    and add the same noise, as planned for 2 records."""
    train, population = _tables(tmp_path, 2, 40)
    out = tmp_path / "audit.json"
    code = main(
        [
            "audit-training",
            *("--train", str(train), "--population", str(population), "--label-column", "label"),
            *("--batch-size", "2", "--epochs", "50", "--lr", "0.5", "--momentum", "0"),
            *("--target-epsilon", "1", "--delta", "1e-5", "--threat-model", "crafted"),
            *("--runs", "24", "--json", str(out), "--quiet"),
        ]
    )
    assert code == EXIT_OK
    result = json.loads(out.read_text())
    runs = result["training_runs"]
    shared = _same_schedule(runs, 2)
    config = TrainingConfig(
        epochs=50, batch_size=2, lr=0.5, momentum=0.0, target_epsilon=1.0, delta=1e-5
    )
    plan = plan_privacy(config, 2)
    assert plan is not None
    assert shared == {
        "sampling_rate": 1.0,
        "steps": 50,
        "update_normaliser": 2.0,
        "noise_multiplier": plan.noise_multiplier,
    }
    assert {run["claim"]["epsilon"] for run in runs} == {result["claimed_epsilon"]}
    assert result["claimed_epsilon"] == pytest.approx(1.0, abs=1e-3)
