"""The one-run guessing rule through the composed audit: a model that memorises most, not all,
of its records claiming ε = 3 escapes the symmetric rule and is refuted by "in" guesses only
(and by ``both``, which holds them among its three rules)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from epsstar.audit.training_audit.audit import TrainingAuditSetup, audit_training
from epsstar.audit.training_audit.frames import read_frame, row_hashes
from epsstar.audit.training_audit.procedure import Claim, RunRequest, RunScores
from epsstar.audit.training_audit.threat_models import ThreatModelName, threat_model
from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.json_types import JsonObject

COLUMNS = ["a", "b", "label"]


@dataclass(frozen=True, slots=True)
class PartialMemoriser:
    """Scores a canary 0 (a loss) when its table holds it and a seeded 80 % of hashes say it is
    remembered; every other canary 1 plus a jitter drawn from its hash alone."""

    def describe(self) -> JsonObject:
        return {"kind": "partial memoriser"}

    def serves(self) -> tuple[ThreatModelName, ...]:
        return ("input",)

    def gradient_capacity(self) -> int:
        return 0

    def claim(self, n_records: int) -> Claim | None:
        return None

    def run(self, request: RunRequest) -> RunScores:
        held = set(row_hashes(read_frame(request.train, "train"), COLUMNS).tolist())
        path = request.canaries[threat_model("input").canaries]
        hashes = row_hashes(read_frame(path, "canaries"), COLUMNS).tolist()
        noise = np.array([np.random.default_rng(abs(int(h))).random(2) for h in hashes])
        exposed = np.array([h in held for h in hashes]) & (noise[:, 0] < 0.8)
        return RunScores({"input": np.where(exposed, 0.0, 1.0) + 0.01 * noise[:, 1]}, None, {}, 0.0)


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tables")
    rng = np.random.default_rng(2)
    paths = []
    for name, n in (("train", 50), ("population", 500)):
        frame = pd.DataFrame(rng.normal(size=(n, 2)), columns=["a", "b"])
        frame["label"] = rng.integers(0, 2, size=n)
        frame.to_csv(folder / f"{name}.csv", index=False)
        paths.append(folder / f"{name}.csv")
    return paths[0], paths[1]


def _audit(tables: tuple[Path, Path], guesses: Any) -> Any:
    setup = TrainingAuditSetup(
        *tables,
        "label",
        canaries=400,
        claimed_epsilon=3.0,
        delta=1e-5,
        k=120,
        guesses=guesses,
    )
    return audit_training(PartialMemoriser(), setup).to_dict()


def test_members_only_and_both_refute_a_partial_memoriser_the_symmetric_rule_does_not(
    tables: tuple[Path, Path],
) -> None:
    rules = ("symmetric", "members-only", "nonmembers-only", "both")
    found = {rule: _audit(tables, rule) for rule in rules}
    assert [found[r]["refuted"] for r in rules] == [False, True, False, True]
    audits = {r: found[r]["threat_models"][0] for r in found}
    assert audits["both"]["guess_rule"]["rule"] == "both"
    assert audits["both"]["guess_rule"]["confidence_each"] == pytest.approx(1 - 0.05 / 3)
    assert len(audits["both"]["guess_rule"]["candidates"]) == 3
    assert audits["both"]["guess_rule"]["chosen_k_minus"] == 0
    assert audits["both"]["chosen_k"]["sides"] == 1  # the record of the rule that was kept
    assert audits["members-only"]["guesses"].count("out") == 0
    assert audits["members-only"]["guesses"].count("in") == 120
    assert audits["nonmembers-only"]["guesses"].count("in") == 0
    assert audits["nonmembers-only"]["guesses"].count("out") == 120
    assert audits["symmetric"]["guesses"].count("out") == 120
    assert audits["symmetric"]["chosen_k"]["sides"] == 2


def test_an_unknown_rule_is_refused(tables: tuple[Path, Path]) -> None:
    with pytest.raises(InvalidInputError, match=r"guesses must be one of .* Found 'top'\.$"):
        _audit(tables, "top")


def test_a_one_run_point_below_the_claim_is_not_drawn_as_a_refutation(
    tables: tuple[Path, Path], tmp_path: Path
) -> None:
    """The symmetric rule's guesses of the partial memoriser: every "in" guess right, so its
    (FPR, FNR) point sits at FPR 0, below the claim's curve, as a refutation's would; yet the
    count of right guesses does not refute ε = 3. The report draws no confidence box for it,
    says the point is for reading, and draws the bound that decided above the claim's curve."""
    from epsstar.audit.training_audit.figures import training_audit_figures
    from epsstar.audit.training_audit.result import TrainingAuditResult
    from epsstar.cli.commands.audit_training import summary
    from epsstar.reports.training_audit import render_training_audit

    setup = TrainingAuditSetup(
        *tables, "label", canaries=400, claimed_epsilon=3.0, delta=1e-5, k=120, guesses="symmetric"
    )
    result: TrainingAuditResult = audit_training(PartialMemoriser(), setup)
    assert not result.refuted
    figures = training_audit_figures(result)
    point = figures.points[0]
    assert point is not None
    assert point.fpr == 0.0
    assert point.fnr < figures.claimed_fnr[0]  # below the claim's curve
    assert point.fpr_interval is None
    assert point.fnr_interval is None
    bound = figures.bound_fnr[0]
    assert bound is not None
    assert np.all(bound >= figures.claimed_fnr)
    html = render_training_audit(result, tmp_path / "audit.html").read_text(encoding="utf-8")
    assert "confidence-box" not in html.split("<body>", 1)[1]
    assert "for reading" in html
    assert "not a refutation" in html
    assert "μ-GDP reading (does not decide" in html
    audit = result.threat_models[0]
    projection = audit.canaries_to_refute
    assert projection is not None
    # 0.9375 of the guesses right: below e^3/(1 + e^3) = 0.9526, the most a trainer that is
    # (3, δ)-DP lets guesses reach, so no number of canaries guessed as well would refute it
    assert projection.precision == pytest.approx(0.9375)
    assert projection.canaries is None
    text = summary(result)
    assert "no audit of up to 10,000,000 canaries guessed as well would refute" in text
    assert "which does not decide" in text


def test_without_a_rule_the_audit_guesses_with_both(tables: tuple[Path, Path]) -> None:
    setup = TrainingAuditSetup(
        *tables, "label", canaries=400, claimed_epsilon=3.0, delta=1e-5, k=120
    )
    document = audit_training(PartialMemoriser(), setup).to_dict()
    assert (
        document["threat_models"][0]["guess_rule"]
        == _audit(tables, "both")["threat_models"][0]["guess_rule"]
    )
    assert document["refuted"]  # which the symmetric rule, the default before, is not


def test_a_delta_too_large_to_refute_is_named_as_the_cause(tables: tuple[Path, Path]) -> None:
    """Every "in" guess right, yet ε = 1 is not refuted at δ = 0.0036 (1/(n ln n) of 50
    records): the summary says the claim's δ, not the guesses, stops a larger audit, and how
    many canaries would do at δ = 0."""
    from epsstar.cli.commands.audit_training import summary

    setup = TrainingAuditSetup(
        *tables,
        "label",
        canaries=400,
        claimed_epsilon=1.0,
        delta=0.0036,
        k=120,
        guesses="members-only",
    )
    result = audit_training(PartialMemoriser(), setup)
    assert not result.refuted
    projection = result.threat_models[0].canaries_to_refute
    assert projection is not None
    assert projection.precision == 1.0
    assert projection.canaries is None
    assert projection.canaries_at_zero_delta == 32
    assert (
        "no audit of up to 10,000,000 canaries guessed as well would refute the claim, because "
        "of its delta (0.0036): the delta term of the one-run bound grows with the canaries "
        "(with delta = 0, about 32 would)."
    ) in summary(result)
