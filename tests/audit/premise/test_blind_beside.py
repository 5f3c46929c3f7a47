"""The blind classifier fitted beside the audit: in a thread of its own, started on the records
kept while streaming, with the numbers of the classifier fitted in the audit's own thread."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from epsstar.audit import AuditOptions, Tables, audit
from epsstar.audit import run as run_module
from epsstar.audit.data.records import LABEL, Records
from epsstar.audit.premise import beside
from epsstar.audit.premise.beside import BlindFit
from epsstar.audit.premise.classifier import BlindLogOdds, blind_log_odds
from epsstar.exceptions import InvalidInputError

MODELS = Path(__file__).resolve().parents[3] / "fixtures" / "models"


def _records() -> Records:
    rng = np.random.default_rng(5)
    sides = [
        pd.DataFrame({"a": rng.normal(0, 1, n), LABEL: rng.integers(0, 2, n)}) for n in (300, 200)
    ]
    return Records(sides[0], sides[1], np.arange(300), np.arange(200), 300, 200)


def test_the_fit_beside_gives_the_log_odds_of_the_fit_in_this_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads: list[str] = []

    def recorded(records: Records, **kwargs: Any) -> BlindLogOdds:
        threads.append(threading.current_thread().name)
        return blind_log_odds(records, **kwargs)

    monkeypatch.setattr(beside, "blind_log_odds", recorded)
    fitted = BlindFit(_records(), folds=2, seed=4).log_odds()
    here = blind_log_odds(_records(), folds=2, seed=4)
    assert len(threads) == 1
    assert threads[0] != threading.current_thread().name
    np.testing.assert_array_equal(fitted.train, here.train)
    np.testing.assert_array_equal(fitted.population, here.population)
    assert fitted.fitted == here.fitted


def test_an_error_of_the_fit_beside_is_raised_where_its_log_odds_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(records: Records, **kwargs: Any) -> BlindLogOdds:
        raise InvalidInputError("the records cannot be encoded. Found 'x'.")

    monkeypatch.setattr(beside, "blind_log_odds", refused)
    fit = BlindFit(_records(), folds=2, seed=0)
    with pytest.raises(InvalidInputError, match="cannot be encoded"):
        fit.log_odds()


def test_an_audit_fits_its_blind_baseline_beside_with_the_same_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The audit starts the classifier beside its statistics once the tables are streamed,
    and its JSON is that of the audit whose classifier is fitted in its own thread."""
    tables = Tables(MODELS / "binary_train.csv", MODELS / "binary_population.csv", "label")
    model = MODELS / "binary_mlp.onnx"
    started: list[BlindFit] = []

    class Recorded(BlindFit):
        def __init__(self, records: Records, *, folds: int, seed: int) -> None:
            super().__init__(records, folds=folds, seed=seed)
            started.append(self)

    monkeypatch.setattr(run_module, "BlindFit", Recorded)
    result = audit(model, tables, AuditOptions(seed=7)).to_dict()
    assert len(started) == 1
    assert started[0].records.n_train == 600

    monkeypatch.setattr(run_module, "_blind_beside", lambda run, streamed: None)
    alone = audit(model, tables, AuditOptions(seed=7)).to_dict()
    assert result["blind_baseline"]["epsilon_star"] is not None
    for record in (result, alone):
        record["provenance"].pop("seconds")
        record["provenance"].pop("created")
    assert result == alone
