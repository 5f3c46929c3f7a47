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
every row has a score and the counts of the lower bound use every row.

The log-odds are ``log P(train | x) / P(population | x)`` less the log of the fitted rows'
ratio, i.e. the classifier's log-likelihood ratio of the record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from epsstar.audit.data.records import Records, sklearn_frame
from epsstar.statistics._validation import FloatArray

__all__ = [
    "CLASSIFIER",
    "DEFAULT_FOLDS",
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
FIT_ROWS: Final = 20_000
#: Most rows per side the blind baseline reads when nothing else needs every record (a
#: seeded random subset, drawn as the file is read). A random subset of each table keeps
#: the premise's test exact (subsets of exchangeable rows are exchangeable); it only loses
#: power (docs/premise.md measures it). With :data:`FIT_ROWS` as many, every row read is fitted.
READ_ROWS: Final = 20_000
#: Trees of each classifier, and the most leaves of a tree.
TREES: Final = 20
LEAVES: Final = 8
#: How the classifier is described in the JSON.
CLASSIFIER: Final = (
    f"HistGradientBoostingClassifier (scikit-learn; {TREES} trees of at most {LEAVES} leaves, "
    f"fitted on at most {FIT_ROWS} rows per side) over the model's columns and the label"
)


@dataclass(frozen=True, slots=True)
class BlindLogOdds:
    """The blind classifier's log-likelihood ratio of every row of each table (in file
    order, over the rows of ``records``), the folds, and the rows fitted per side."""

    train: FloatArray = field(repr=False)
    population: FloatArray = field(repr=False)
    folds: int
    fitted: tuple[int, int]


def _classifier(seed: int) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(
        max_iter=TREES,
        max_leaf_nodes=LEAVES,
        early_stopping=False,
        categorical_features="from_dtype",
        random_state=seed,
    )


def _fold_of(n: int, folds: int, rng: np.random.Generator) -> np.ndarray:
    """A random fold for each of ``n`` rows, the folds as even as ``n`` allows."""
    return rng.permutation(np.arange(n) % folds)


def blind_log_odds(records: Records, *, folds: int = DEFAULT_FOLDS, seed: int = 0) -> BlindLogOdds:
    """The cross-fitted log-likelihood ratios of every record (see the module docstring)."""
    import pandas as pd
    from threadpoolctl import threadpool_limits

    # Imported before the limit is set: threadpoolctl limits only the libraries already
    # loaded, and the OpenMP runtime of the trees is loaded with them.
    _classifier(seed)

    rng = np.random.default_rng([seed, 0xB11D])
    sides = (records.train, records.population)
    both = sklearn_frame(pd.concat(sides, ignore_index=True))
    member = np.concatenate([np.ones(len(sides[0]), bool), np.zeros(len(sides[1]), bool)])
    offset = np.concatenate([[0], np.cumsum([len(side) for side in sides])])
    fold = np.empty(len(both), np.int64)
    fitted = np.zeros(len(both), bool)
    for i in range(2):
        rows = np.arange(offset[i], offset[i + 1])
        fold[rows] = _fold_of(len(rows), folds, rng)
        chosen = rng.permutation(len(rows))[: min(len(rows), FIT_ROWS)]
        fitted[rows[chosen]] = True
    n_fit = (int(fitted[member].sum()), int(fitted[~member].sum()))
    prior = np.log(n_fit[0] / n_fit[1])
    scores = np.empty(len(both))
    # One thread: the histogram trees spend most of their time waiting on busy cores.
    with threadpool_limits(limits=1):
        for k in range(folds):
            model = _classifier(seed + k)
            train_on = fitted & (fold != k)
            model.fit(both[train_on], member[train_on])
            scored = fold == k
            p = model.predict_proba(both[scored])[:, 1]
            p = np.clip(p, 1e-12, 1 - 1e-12)
            scores[scored] = np.log(p) - np.log1p(-p) - prior
    return BlindLogOdds(scores[: offset[1]], scores[offset[1] :], folds, n_fit)
