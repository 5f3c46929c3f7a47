"""The audit of a training procedure, composed, with stand-in procedures that train nothing.

A *memoriser* scores a canary 0 when the run's training table holds it and 1 when not (the
loss of a model that remembers its records); a *forgetter* gives every canary the same
score. The memoriser claiming ε = 1 must be refuted, in one run and over many; the forgetter
never (its scores carry nothing about the inclusion bits, so any bound above the claim would
be a bug). Many runs are kept in ``--work`` as they finish and an interrupted audit resumes
without redoing them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from epsstar.audit.training_audit.audit import TrainingAuditSetup, audit_training
from epsstar.audit.training_audit.frames import read_frame, row_hashes
from epsstar.audit.training_audit.procedure import Claim, RunRequest, RunScores
from epsstar.audit.training_audit.threat_models import ThreatModelName, threat_model
from epsstar.exceptions import InputFileError, InsufficientDataError, InvalidInputError
from epsstar.plumbing.records.json_types import JsonObject

COLUMNS = ["a", "b", "label"]


@dataclass(frozen=True, slots=True)
class StandIn:
    """A procedure that trains nothing: it remembers (or not) its table, and logs each run."""

    remembers: bool
    log: Path
    fail_at: int | None = None
    states: float | None = None

    def describe(self) -> JsonObject:
        return {"kind": "stand-in", "remembers": self.remembers}

    def serves(self) -> tuple[ThreatModelName, ...]:
        return ("input", "crafted")

    def gradient_capacity(self) -> int:
        return 0

    def claim(self, n_records: int) -> Claim | None:
        return None

    def run(self, request: RunRequest) -> RunScores:
        if request.index == self.fail_at:
            raise InvalidInputError(f"run {request.index} interrupted. Found a test.")
        with self.log.open("a", encoding="utf-8") as log:
            log.write(f"{request.index}\n")
        held = set(row_hashes(read_frame(request.train, "train"), COLUMNS).tolist())
        scores = {}
        for name in request.threat_models:
            path = request.canaries[threat_model(name).canaries]
            hashes = row_hashes(read_frame(path, "canaries"), COLUMNS)
            member = np.array([h in held for h in hashes.tolist()], dtype=np.float64)
            scores[name] = 1.0 - member if self.remembers else np.zeros(hashes.size)
        claim = None if self.states is None else Claim(True, self.states, 1e-5, "the stand-in")
        return RunScores(scores, claim, {"file": None}, 0.0)


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tables")
    rng = np.random.default_rng(1)
    paths = []
    for name, n in (("train", 50), ("population", 400)):
        frame = pd.DataFrame(rng.normal(size=(n, 2)), columns=["a", "b"])
        frame["label"] = rng.integers(0, 2, size=n)
        frame.to_csv(folder / f"{name}.csv", index=False)
        paths.append(folder / f"{name}.csv")
    return paths[0], paths[1]


def _setup(tables: tuple[Path, Path], **changes: object) -> TrainingAuditSetup:
    base = TrainingAuditSetup(*tables, "label", canaries=200, claimed_epsilon=1.0, delta=1e-5)
    return replace(base, **changes)


def test_one_run_refutes_a_memoriser_and_not_a_forgetter(
    tables: tuple[Path, Path], tmp_path: Path
) -> None:
    log = tmp_path / "log"
    refuted = audit_training(StandIn(True, log), _setup(tables))
    kept = audit_training(StandIn(False, log), _setup(tables))
    assert refuted.refuted
    audit = refuted.threat_models[0]
    assert audit.one_run is not None
    assert audit.one_run.correct == audit.one_run.guesses  # every guess right
    assert audit.epsilon_lower_gdp is not None
    assert audit.epsilon_lower_gdp >= audit.epsilon_lower_bound  # f-DP is the tighter one
    assert not kept.refuted
    assert kept.epsilon_lower_bound < 1.0
    document = refuted.to_dict()
    assert document["canaries"] == 200
    assert document["runs"] == 1


def test_too_few_canaries_are_refused_naming_the_fewest_that_could_refute(
    tables: tuple[Path, Path], tmp_path: Path
) -> None:
    with pytest.raises(InsufficientDataError, match=r"at least \d+ are needed. Found 4"):
        audit_training(StandIn(True, tmp_path / "log"), _setup(tables, canaries=4))


def test_many_runs_resume_without_redoing_finished_runs(
    tables: tuple[Path, Path], tmp_path: Path
) -> None:
    log, work = tmp_path / "log", tmp_path / "work"
    setup = _setup(tables, runs=20, bound="gdp", work=work)
    with pytest.raises(InvalidInputError, match="interrupted"):
        audit_training(StandIn(True, log, fail_at=13), setup)
    first = log.read_text().split()
    assert len(first) == 13
    result = audit_training(StandIn(True, log), setup)
    again = log.read_text().split()[len(first) :]
    assert sorted(first + again, key=int) == [str(i) for i in range(40)]
    assert not set(first) & set(again)  # no finished run done twice
    assert result.design == "many-runs"
    assert result.runs == 40
    assert result.refuted
    bounds = result.threat_models[0].many_runs
    assert bounds is not None
    assert bounds.false_positives == bounds.false_negatives == 0


def test_a_work_folder_of_another_audit_is_refused(
    tables: tuple[Path, Path], tmp_path: Path
) -> None:
    work = tmp_path / "work"
    audit_training(StandIn(True, tmp_path / "log"), _setup(tables, runs=20, bound="gdp", work=work))
    with pytest.raises(InputFileError, match="holds the runs of another audit"):
        audit_training(
            StandIn(True, tmp_path / "log"), _setup(tables, runs=20, bound="gdp", work=work, seed=1)
        )


def test_the_report_draws_the_claim_the_points_and_the_verdict(
    tables: tuple[Path, Path], tmp_path: Path
) -> None:
    from epsstar.audit.training_audit.figures import training_audit_figures
    from epsstar.reports.training_audit import render_training_audit

    result = audit_training(StandIn(True, tmp_path / "log"), _setup(tables))
    figures = training_audit_figures(result)
    # The claim's curve: f(0) = 1 − δ, f(1) = 0, and the memoriser's test lies below it.
    assert figures.claimed_fnr[0] == pytest.approx(1.0 - 1e-5)
    assert figures.claimed_fnr[-1] == 0.0
    point = figures.points[0]
    assert point is not None
    assert (point.fpr, point.fnr) == (0.0, 0.0)
    assert point.fpr_interval is None  # one run: the bound decides, not a box
    bound = figures.bound_fnr[0]
    assert bound is not None
    assert np.all(bound <= figures.claimed_fnr)
    assert np.any(bound < figures.claimed_fnr)
    html = render_training_audit(result, tmp_path / "audit.html").read_text(encoding="utf-8")
    assert "refuted" in html
    assert html.count("<svg") == 2  # the trade-off chart and one histogram
    assert "cannot be (1, 1e-05)-DP" in html


def test_too_few_runs_are_refused_naming_the_runs_that_could_refute(
    tables: tuple[Path, Path], tmp_path: Path
) -> None:
    log = tmp_path / "log"
    with pytest.raises(InsufficientDataError, match=r"use --runs (\d+) or more\. Found 6\.$"):
        audit_training(StandIn(True, log), _setup(tables, runs=6, bound="gdp"))
    assert not log.exists()  # refused before any training


def test_the_claim_the_training_states_is_audited_and_a_different_one_warned_about(
    tables: tuple[Path, Path], tmp_path: Path
) -> None:
    log = tmp_path / "log"
    stated = audit_training(StandIn(True, log, states=1.5), _setup(tables, claimed_epsilon=None))
    assert stated.claimed_epsilon == 1.5
    assert stated.claimed_from == "the stand-in"
    assert stated.warnings == ()
    given = audit_training(StandIn(True, log, states=1.5), _setup(tables))
    assert given.claimed_epsilon == 1.0
    assert len(given.warnings) == 1
    assert "differs from the one the training states, epsilon = 1.5" in given.warnings[0]
