"""QMIA and the leak beyond the blind baseline, run through the attack registry by
:func:`epsstar.audit.audit` and audited like the loss attack."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from epsstar.audit import audit
from epsstar.audit.attacks.registry import REGISTRY
from epsstar.audit.attacks.scoring import AttackSettings
from epsstar.audit.data.reading import Tables
from epsstar.audit.output.result import AuditResult
from epsstar.audit.premise.settings import PremiseSettings
from epsstar.exceptions import InvalidInputError

MODELS = Path(__file__).resolve().parents[3] / "fixtures" / "models"
FEATURES = [f"x{i}" for i in range(8)]
ATTACKS = AttackSettings(("loss", "qmia", "beyond-baseline"))


def _audit(model: str, data: str, population: Path) -> AuditResult:
    tables = Tables(MODELS / f"{data}_train.csv", population, "label", features=FEATURES)
    return audit(MODELS / model, tables, attack=ATTACKS)


def test_the_registry_knows_what_they_need() -> None:
    assert REGISTRY["qmia"].needs == {"records"}
    assert REGISTRY["beyond-baseline"].needs == {"blind"}


@pytest.fixture(scope="module")
def shifted(tmp_path_factory: pytest.TempPathFactory) -> AuditResult:
    """A model that barely memorises (logistic regression, 8 features, 600 rows) audited
    against a population whose x0 is moved by one standard deviation."""
    frame = pd.read_csv(MODELS / "binary_population.csv")
    frame["x0"] = frame["x0"] + frame["x0"].std()
    path = tmp_path_factory.mktemp("shifted") / "population.csv"
    frame.to_csv(path, index=False)
    return _audit("binary_logreg.onnx", "binary", path)


def test_every_attack_scores_every_record(shifted: AuditResult) -> None:
    assert [a.name for a in shifted.attacks] == ["loss", "qmia", "beyond-baseline"]
    for attack in shifted.attacks:
        assert (attack.n_members, attack.n_nonmembers) == (600, 400)
        assert attack.epsilon.method == "tails-shape-tested"
        assert attack.epsilon.delta == shifted.delta


def test_a_shift_without_memorisation_reads_as_no_leak_beyond_the_baseline(
    shifted: AuditResult,
) -> None:
    """The loss attack reads the shift as a leak; the attacks conditioned on the record
    (QMIA on the record, beyond-baseline on the blind classifier's score) do not."""
    by_name = {a.name: a for a in shifted.attacks}
    assert shifted.premise_holds is False
    assert by_name["loss"].epsilon.epsilon > 1
    assert by_name["beyond-baseline"].epsilon.epsilon == 0
    assert by_name["qmia"].epsilon.epsilon == 0
    assert by_name["beyond-baseline"].settings["bins"] == 2


def test_beyond_baseline_keeps_a_leak_the_model_has() -> None:
    """The multi-class MLP memorises (loss lower bound above 0 on the same distribution):
    the leak beyond the baseline keeps a positive lower bound."""
    result = _audit("multiclass_mlp.onnx", "multiclass", MODELS / "multiclass_population.csv")
    by_name = {a.name: a for a in result.attacks}
    assert result.premise_holds is True
    assert by_name["loss"].lower_bound.epsilon > 0
    assert by_name["beyond-baseline"].lower_bound.epsilon > 0
    # Ranks within bins: between 0 and 1, members lower on average.
    assert np.isfinite(by_name["beyond-baseline"].epsilon.epsilon)


def test_beyond_baseline_is_refused_without_the_baseline_before_the_model_runs(
    tmp_path: Path,
) -> None:
    tables = Tables(tmp_path / "absent.csv", tmp_path / "absent-too.csv", "label")
    skipped = PremiseSettings(skip_blind_baseline="not wanted")
    with pytest.raises(InvalidInputError, match="needs the blind baseline. Found it skipped"):
        audit(MODELS / "binary_logreg.onnx", tables, attack=ATTACKS, premise=skipped)
