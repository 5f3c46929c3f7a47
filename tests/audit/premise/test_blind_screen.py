"""The columns a blind classifier of a wide table is fitted on: the screen keeps the columns
that differ (in mean, spread, missingness), the label always, and reads only the rows the
classifier is fitted on; a shift in one column among many still fails the premise of an
audit, end to end."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from numpy.typing import NDArray

import epsstar
from epsstar.audit.data.records import LABEL, Records
from epsstar.audit.premise import classifier
from epsstar.audit.premise.classifier import FIT_COLUMNS, blind_log_odds
from epsstar.audit.premise.screen import screened_columns


def test_the_screen_keeps_each_kind_of_difference_and_the_label() -> None:
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(2000, 100)).astype(np.float32)
    member = np.arange(2000) < 1000
    matrix[member, 7] += 0.5  # mean
    matrix[member, 20] *= 2  # spread
    matrix[member & (rng.random(2000) < 0.3), 33] = np.nan  # missingness
    matrix[:, 50] = 1e12 + matrix[:, 50] * 1e9  # far from 0: a shift of half a spread
    matrix[member, 50] += 5e8
    matrix[:, 61] = member  # constant on each side
    kept = screened_columns(matrix, member, most=6, always=[99])
    np.testing.assert_array_equal(kept, [7, 20, 33, 50, 61, 99])


def test_a_table_no_wider_than_the_cap_keeps_every_column() -> None:
    matrix = np.zeros((10, 5), np.float32)
    kept = screened_columns(matrix, np.arange(10) < 5, most=5, always=[])
    np.testing.assert_array_equal(kept, np.arange(5))


def _wide(columns: int, shift: float, *, numbered: bool = False, rows: int = 600) -> Records:
    """Coin flips, one normal column ``x`` moved by ``shift`` in the population, the label;
    with ``numbered``, a column ``row`` of distinct values (which tells the sides apart)."""
    rng = np.random.default_rng(1)
    sides = []
    for moved in (0.0, shift):
        frame = pd.DataFrame(
            rng.integers(0, 2, size=(rows, columns)), columns=[f"c{j}" for j in range(columns)]
        )
        if numbered:
            frame["row"] = np.arange(len(sides) * rows, (len(sides) + 1) * rows, dtype=float)
        frame["x"] = rng.normal(moved, 1.0, rows)
        sides.append(frame.assign(**{LABEL: rng.integers(0, 2, rows)}))
    return Records(sides[0], sides[1], np.arange(rows), np.arange(rows), rows, rows)


def test_the_screen_reads_only_the_rows_its_classifier_is_fitted_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every row has a distinct ``row`` value: the rows the screen of fold k read are fitted
    rows of the other folds, never a row fold k's classifier scores."""
    read: list[tuple[NDArray[Any], NDArray[Any]]] = []

    def spy(matrix: NDArray[Any], member: NDArray[Any], **kwargs: Any) -> NDArray[Any]:
        read.append((matrix, member))
        return screened_columns(matrix, member, **kwargs)

    monkeypatch.setattr(classifier, "screened_columns", spy)
    monkeypatch.setattr(classifier, "FIT_ROWS", 250)
    records = _wide(60, 1.0, numbered=True)
    scores = blind_log_odds(records, seed=2)
    assert scores.fold_of is not None
    fold = np.concatenate(scores.fold_of)
    at = list(records.train.columns).index("row")
    assert len(read) == scores.folds
    for k, (matrix, member) in enumerate(read):
        rows = matrix[:, at].astype(np.int64)
        assert np.all(fold[rows] != k)
        assert member.sum() <= 250
        assert (~member).sum() <= 250
        np.testing.assert_array_equal(member, rows < 600)


def test_one_shifted_column_among_many_is_found() -> None:
    """Half a standard deviation in one of 201 columns: with :data:`FIT_COLUMNS` columns
    fitted, the blind AUC is as high as with every column (Φ(0.5 / √2) = 0.64 is the best
    any classifier gets), and near 0.5 without the shift."""
    from epsstar.statistics.attacks.power import attack_auc

    def auc(scores: classifier.BlindLogOdds) -> float:
        return attack_auc(-scores.train, -scores.population)

    assert FIT_COLUMNS < 200
    screened = auc(blind_log_odds(_wide(200, 0.5), seed=0))
    same = auc(blind_log_odds(_wide(200, 0.0), seed=0))
    every = auc(blind_log_odds(_wide(200, 0.5), seed=0, fit_columns=1_000))
    assert screened > 0.55
    assert screened > every - 0.01
    assert abs(same - 0.5) < 0.05


def _table(seed: int, shift: float, rows: int = 500) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    features = rng.integers(0, 2, size=(rows, 120)).astype(np.float64)
    features[:, 5] += rng.normal(shift, 1.0, rows)
    labels = (features[:, 0] + rng.normal(size=rows) > 0.5).astype(np.int64)
    return pd.DataFrame(features, columns=[f"f{j}" for j in range(120)]).assign(label=labels)


@pytest.mark.parametrize(("shift", "holds"), [(0.0, True), (0.6, False)])
def test_an_audit_of_a_wide_table_reads_its_premise_from_the_screened_columns(
    shift: float, holds: bool
) -> None:
    """Through the Python API: a fitted model, tables of 120 columns, the population's
    column f5 moved or not; the JSON names the cap on the columns."""
    from sklearn.linear_model import LogisticRegression

    train, population = _table(0, 0.0), _table(1, shift)
    model = LogisticRegression(max_iter=200).fit(train.drop(columns="label"), train.label)
    document = epsstar.audit(model, train, population, label="label").to_dict()
    assert document["premise_holds"] is holds
    assert f"{FIT_COLUMNS} columns screened" in document["blind_baseline"]["classifier"]
