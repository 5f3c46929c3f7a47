"""Hostile objects handed to the Python API: each is refused with one line naming the object
(``the training DataFrame``, a model's type), the column, row or value, and no traceback of a
library underneath; and a result written to a bad path leaves no file behind.

Every case builds its model and frames in memory (files only in ``tmp_path``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import epsstar
from epsstar.exceptions import InputFileError, InvalidInputError

COLUMNS = ["a", "b", "c", "d"]


def frame(seed: int, rows: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(rows, 4))
    labels = (features[:, 0] + rng.normal(size=rows) > 0).astype(np.int64)
    return pd.DataFrame(features, columns=COLUMNS).assign(label=labels)


@pytest.fixture(scope="module")
def fitted() -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    train = frame(0)
    return make_pipeline(StandardScaler(), LogisticRegression()).fit(train[COLUMNS], train.label)


def with_nan(data: pd.DataFrame) -> pd.DataFrame:
    data = data.copy()
    data.loc[7, "c"] = np.nan
    return data


def unfitted(_: Any) -> Any:
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier()


#: Each case: the model (from the fitted pipeline), the training and population data, and the
#: words the one-line message must hold (what is wrong, then what was found).
CASES: dict[str, tuple[Callable[[Any], Any], Callable[[], Any], Callable[[], Any], list[str]]] = {
    "no label column": (
        lambda m: m,
        lambda: frame(0).drop(columns="label"),
        lambda: frame(1),
        ["the training DataFrame", "label column 'label'", "Found columns 'a', 'b', 'c', 'd'."],
    ),
    "unfitted estimator": (
        unfitted,
        lambda: frame(0),
        lambda: frame(1),
        ["must be fitted", "unfitted sklearn.ensemble._forest.RandomForestClassifier."],
    ),
    "no loader claims it": (
        lambda _: {"coef": [1.0, 2.0]},
        lambda: frame(0),
        lambda: frame(1),
        ["loaders of objects: ", "sklearn", "Found a builtins.dict."],
    ),
    "mismatched columns": (
        lambda m: m,
        lambda: frame(0),
        lambda: frame(1).rename(columns={"c": "z"}),
        ["the population DataFrame", "missing 'c'", "Found columns 'a', 'b', 'z', 'd'."],
    ),
    "missing value": (
        lambda m: m,
        lambda: frame(0),
        lambda: with_nan(frame(1)),
        ["the population DataFrame", "column 'c'", "Found nan at row 7."],
    ),
    "empty frame": (
        lambda m: m,
        lambda: frame(0).iloc[:0],
        lambda: frame(1),
        ["the training DataFrame", "at least one row", "Found none."],
    ),
    "same frame twice": (
        lambda m: m,
        lambda: frame(0),
        lambda: frame(0),
        ["must differ", "the training DataFrame and the population DataFrame"],
    ),
    "a list for a table": (
        lambda m: m,
        lambda: [[1.0, 2.0]],
        lambda: frame(1),
        ["the training data must be a path, a pandas or polars DataFrame", "builtins.list."],
    ),
    "column names that are not text": (
        lambda m: m,
        lambda: frame(0).set_axis(range(5), axis=1),
        lambda: frame(1),
        ["the training DataFrame", "column names must be strings", "Found 0 (int)."],
    ),
    "a column of mixed types": (
        lambda m: m,
        lambda: frame(0).assign(b=[1.5, "x"] * 150),
        lambda: frame(1),
        ["the training DataFrame", "column 'b' must hold values of one type", "'x'"],
    ),
    "arrays of different lengths": (
        lambda m: m,
        lambda: (np.zeros((10, 4)), np.zeros(9)),
        lambda: frame(1),
        ["the training (X, y) arrays", "Found X (10, 4), y (9,)."],
    ),
}


@pytest.mark.filterwarnings("ignore::epsstar.exceptions.EpsstarWarning")
@pytest.mark.parametrize("case", CASES)
def test_hostile_objects_are_refused_in_one_line(case: str, fitted: Any) -> None:
    model, train, population, words = CASES[case]
    with pytest.raises(InvalidInputError) as caught:
        epsstar.audit(model(fitted), train(), population(), label="label")
    message = str(caught.value)
    assert "\n" not in message
    assert "epsstar-tables-" not in message  # never the staged file's path
    for word in words:
        assert word in message, (word, message)
    assert "Found " in message


def test_an_unknown_option_is_refused_listing_the_options(fitted: Any) -> None:
    with pytest.raises(InvalidInputError, match=r"takes the options .*max_epsilon.* 'max_eps'\.$"):
        epsstar.audit(fitted, frame(0), frame(1), label="label", max_eps=1.0)


@pytest.mark.filterwarnings("ignore::epsstar.exceptions.EpsstarWarning")
def test_a_result_written_where_it_cannot_be_leaves_no_file(fitted: Any, tmp_path: Path) -> None:
    result = epsstar.audit(fitted, frame(0), frame(1), label="label")
    folder = tmp_path / "read-only"
    folder.mkdir()
    missing = tmp_path / "no-such-folder" / "audit.json"
    with pytest.raises(InputFileError, match=r"cannot write .*no-such-folder"):
        result.write_json(missing)
    assert not missing.parent.exists()
    target = folder / "audit.html"
    target.mkdir()  # a folder where the file should go
    with pytest.raises(InputFileError):
        result.write_html(target)
    assert [p.name for p in folder.iterdir()] == ["audit.html"]
    assert [p.name for p in target.iterdir()] == []
