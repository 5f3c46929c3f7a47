"""The blind classifier: told ``--train`` rows from ``--population`` rows by the records
alone, never the model.

Epsilon* reads the gap between the model's losses on members and on population records as
memorisation. That reading rests on a premise: both tables come from one distribution.
When they do not (a later month, another site, de-duplicated rows), a classifier that sees
only the records already tells them apart, and so does any model's loss (Das et al. 2024,
"Blind baselines beat membership inference attacks for foundation models").

:func:`blind_log_odds` fits scikit-learn's ``HistGradientBoostingClassifier`` over the
columns the model reads and the label. Why this default: gradient-boosted trees find a shift
in one feature, in the joint law of several, or in the class mix (the label is a column)
without scaling or encoding (text columns are native categories, missing values are
routed). It runs on every audit, so it is kept cheap: :data:`TREES` trees of at most
:data:`LEAVES` leaves with no early stopping (a shift the records carry is found in the
first trees; more trees mostly fit noise at the fixtures' sizes), on one thread.

It is cross-fitted: the rows are cut into ``folds`` random folds and every row
is scored by the classifier fitted on the other folds, so that no score comes from a
classifier that saw its row; the pooled scores of members and non-members are then
exchangeable when the premise holds, and the held-out lower bound on them is valid. At most
:data:`FIT_ROWS` rows per side are used to fit (a seeded random subset); the rows left out
are scored by the classifier of a fold chosen at random, which did not see them either, so
every row has a score and the counts of the lower bound use every row. A table of more than
:data:`FIT_COLUMNS` columns is fitted on that many, screened from the fitted rows of the
other folds (:mod:`.screen`; the label always among them), so a scored row never chose its
classifier's columns either. Fitting on a subset costs only power, never validity.

Why these sizes. The baseline runs on every audit; the trees' cost grows with rows times
columns, and scikit-learn's binning with the columns alone, so a cap on rows alone left a
table of 600 columns paying 1.5 to 2.8 CPU s for it (docs/performance.md). With rows and
columns capped, an audit pays the same for the baseline whatever its tables' size and
width. Why :data:`FIT_COLUMNS` is 32 (docs/premise.md, *Wide tables*): on Adult with 586
columns of coin flips added, 1,000 rows per side, the cheapest cap measured under which
every shift of the power benchmark is flagged as often as with every column, and by the
classifier's own test (the ranks) within 5 points, false alarms within the tests' level;
16 columns lost 16 points of the ranks on de-duplicated populations. The power at
:data:`FIT_ROWS`: docs/premise.md measures it with 500 rows per side and fold fitted,
fewer than any table of :data:`FIT_ROWS` rows per side gets.

The log-odds are ``log P(train | x) / P(population | x)`` less the log of the fitted rows'
ratio, i.e. the classifier's log-likelihood ratio of the record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.data.records import LABEL, Records
from epsstar.audit.premise.screen import screened_columns
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.bounds.repeats_test import repeat_groups

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = [
    "CLASSIFIER",
    "DEFAULT_FOLDS",
    "FIT_COLUMNS",
    "FIT_ROWS",
    "LEAVES",
    "READ_ROWS",
    "TREES",
    "BlindLogOdds",
    "blind_log_odds",
]

#: Folds of the cross-fitting.
DEFAULT_FOLDS: Final = 2
#: Most rows per side the classifiers are fitted on (every row read is scored).
FIT_ROWS: Final = 5_000
#: Most columns each classifier is fitted on (the label among them), screened from its
#: fitted rows when a table has more (:mod:`.screen`); why this many: the module docstring.
FIT_COLUMNS: Final = 32
#: Most rows per side the blind baseline reads when nothing else needs every record (a
#: seeded random subset, kept as the tables are streamed). A random subset of each table
#: keeps the premise's tests exact (subsets of exchangeable rows are exchangeable); it only
#: loses power (docs/premise.md states how much).
READ_ROWS: Final = 10_000
#: Trees of each classifier, and the most leaves of a tree.
TREES: Final = 20
LEAVES: Final = 8
#: Text columns with more distinct values than this are given as their codes.
_MAX_CATEGORIES: Final = 250
#: How the classifier is described in the JSON.
CLASSIFIER: Final = (
    f"HistGradientBoostingClassifier (scikit-learn; {TREES} trees of at most {LEAVES} leaves, "
    f"fitted on at most {FIT_ROWS} rows per side and {FIT_COLUMNS} columns screened from the "
    "model's columns and the label)"
)


@dataclass(frozen=True, slots=True)
class BlindLogOdds:
    """The blind classifier's log-likelihood ratio of every row of each table (in file
    order, over the rows of ``records``), the folds, and the rows fitted per side."""

    train: FloatArray = field(repr=False)
    population: FloatArray = field(repr=False)
    folds: int
    fitted: tuple[int, int]
    #: The fold of every row of each table (``None``: not known; then the rows are read
    #: as one fold).
    fold_of: tuple[NDArray[np.int64], NDArray[np.int64]] | None = field(default=None, repr=False)
    #: An id of every row's values in each table, equal for rows equal in every column the
    #: classifier read, as it read them (float32, text as codes;
    #: :func:`~epsstar.statistics.bounds.repeats_test.repeat_groups`), for the test of exact
    #: repeats (``None``: not known; then not tested). Any grouping that depends on the row
    #: alone keeps that test's level, so the float32 rounding costs nothing in validity.
    groups: tuple[NDArray[np.int64], NDArray[np.int64]] | None = field(default=None, repr=False)


def _classifier(seed: int, categorical: NDArray[np.bool_] | None = None) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(
        max_iter=TREES,
        max_leaf_nodes=LEAVES,
        early_stopping=False,
        categorical_features=categorical,
        random_state=seed,
    )


def _codes(column: pd.Series) -> tuple[NDArray[np.float64], bool]:
    """A text column's codes (missing: NaN), and whether they are read as categories: up
    to :data:`_MAX_CATEGORIES` distinct values; past that, as numbers."""
    import pandas as pd

    text = column.astype(str).where(column.notna())
    codes, uniques = pd.factorize(text, use_na_sentinel=True)
    values = np.where(codes < 0, np.nan, codes).astype(np.float64)
    return values, len(uniques) <= _MAX_CATEGORIES


def encoded(records: Records) -> tuple[NDArray[np.float32], NDArray[np.bool_]]:
    """Both tables' records (train first) as one float32 matrix the trees read, and which
    of its columns are categories. Encoded once, as numpy (the numeric columns in one
    block), because the classifiers' own checks of a data frame with categories cost more
    than their fits at the fixtures' sizes (docs/premise.md, *Cost*)."""
    import pandas as pd

    both = pd.concat([records.train, records.population], ignore_index=True)
    numeric = [
        pd.api.types.is_bool_dtype(both[name]) or pd.api.types.is_numeric_dtype(both[name])
        for name in both.columns
    ]
    categorical = np.zeros(both.shape[1], dtype=bool)
    if all(numeric):  # one block, not copied into a second matrix column by column
        return both.to_numpy(dtype=np.float32, na_value=np.nan), categorical
    matrix = np.empty(both.shape, dtype=np.float32)
    at = np.flatnonzero(numeric)
    if at.size:
        block = both.iloc[:, at].to_numpy(dtype=np.float32, na_value=np.nan)
        matrix[:, at] = block
    for j, name in enumerate(both.columns):
        if not numeric[j]:
            matrix[:, j], categorical[j] = _codes(both[name])
    return matrix, categorical


def _fold_of(n: int, folds: int, rng: np.random.Generator) -> np.ndarray:
    """A random fold for each of ``n`` rows, the folds as even as ``n`` allows."""
    return rng.permutation(np.arange(n) % folds)


def blind_log_odds(
    records: Records, *, folds: int = DEFAULT_FOLDS, seed: int = 0, fit_columns: int = FIT_COLUMNS
) -> BlindLogOdds:
    """The cross-fitted log-likelihood ratios of every record (see the module docstring),
    each classifier fitted on at most ``fit_columns`` columns."""
    from threadpoolctl import threadpool_limits

    # Imported before the limit is set: threadpoolctl limits only the libraries already
    # loaded, and the OpenMP runtime of the trees is loaded with them.
    _classifier(seed)

    rng = np.random.default_rng([seed, 0xB11D])
    sides = (records.train, records.population)
    both, categorical = encoded(records)
    member = np.concatenate([np.ones(len(sides[0]), bool), np.zeros(len(sides[1]), bool)])
    offset = np.concatenate([[0], np.cumsum([len(side) for side in sides])])
    fold = np.empty(len(both), np.int64)
    fitted = np.zeros(len(both), bool)
    for i in range(2):
        rows = np.arange(offset[i], offset[i + 1])
        fold[rows] = _fold_of(len(rows), folds, rng)
        chosen = rng.permutation(len(rows))[:FIT_ROWS]
        fitted[rows[chosen]] = True
    n_fit = (int(fitted[member].sum()), int(fitted[~member].sum()))
    prior = np.log(n_fit[0] / n_fit[1])
    scores = np.empty(len(both))
    label = [j for j, name in enumerate(records.train.columns) if name == LABEL]
    # One thread: the histogram trees spend most of their time waiting on busy cores.
    with threadpool_limits(limits=1):
        for k in range(folds):
            train_on = fitted & (fold != k)
            fit = both[train_on]
            columns = screened_columns(fit, member[train_on], most=fit_columns, always=label)
            model = _classifier(seed + k, categorical[columns])
            model.fit(fit[:, columns], member[train_on])
            scored = fold == k
            p = model.predict_proba(both[scored][:, columns])[:, 1]
            p = np.clip(p, 1e-12, 1 - 1e-12)
            scores[scored] = np.log(p) - np.log1p(-p) - prior
    cut = offset[1]
    group = repeat_groups(both)
    return BlindLogOdds(
        scores[:cut],
        scores[cut:],
        folds,
        n_fit,
        (fold[:cut], fold[cut:]),
        (group[:cut], group[cut:]),
    )
