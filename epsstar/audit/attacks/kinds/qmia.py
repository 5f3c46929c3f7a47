"""QMIA (Bertran et al. 2023, "Scalable membership inference attacks via quantile
regression") as an audit's attack: no reference models, one regression on population
records.

The attack learns, from population records only (non-members), what loss the target model
gives a record *like this one*: a gradient-boosted quantile regression of the loss on the
record (the model's columns and the label) gives the conditional median ``m(x)``, and a
second one, of ``|loss - m(x)|``, the conditional median absolute deviation ``s(x)``. A
record whose loss is far below what its look-alikes get is called a member. The score,
oriented like a loss, is ``(loss - m(x)) / s(x)``: Bertran et al. fit a Gaussian's mean and
spread per record; the median and the median absolute deviation are the robust pair,
fitted with scikit-learn's pinball loss (``HistGradientBoostingRegressor(loss="quantile")``).

The population is cut in two halves at random (seeded): the regressions fitted on one half
score the other half and a random half of the members, so that no population record is
scored by a regression that saw it; every record is scored.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from epsstar.audit.attacks.attack import AttackParameters, Scores
from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.audit.data.records import sklearn_frame
from epsstar.plumbing.records.json_types import JsonObject
from epsstar.statistics._validation import FloatArray

__all__ = ["qmia_scores"]

#: The smallest spread a score is divided by, relative to the population's median deviation.
_SPREAD_FLOOR: Final = 0.05


def _regressor(seed: int) -> Any:
    from sklearn.ensemble import HistGradientBoostingRegressor

    return HistGradientBoostingRegressor(
        loss="quantile",
        quantile=0.5,
        max_iter=100,
        early_stopping=True,
        validation_fraction=0.1,
        n_iter_no_change=10,
        categorical_features="from_dtype",
        random_state=seed,
    )


def _standardised(
    fit_x: Any, fit_loss: FloatArray, score_x: Any, score_loss: FloatArray, seed: int
) -> FloatArray:
    """``(loss - m(x)) / s(x)`` of the scored rows, ``m`` and ``s`` fitted on the others."""
    median = _regressor(seed).fit(fit_x, fit_loss)
    deviation = np.abs(fit_loss - median.predict(fit_x))
    spread = _regressor(seed + 1).fit(fit_x, deviation)
    floor = _SPREAD_FLOOR * max(float(np.median(deviation)), 1e-12)
    scale = np.maximum(spread.predict(score_x), floor)
    return np.asarray((score_loss - median.predict(score_x)) / scale, dtype=np.float64)


def qmia_scores(inputs: AttackInputs, parameters: AttackParameters, seed: int) -> Scores:
    """The standardised loss of every member and non-member (see the module docstring)."""
    import pandas as pd
    from threadpoolctl import threadpool_limits

    records = inputs.record_tables("qmia")
    loss_train, loss_population = inputs.audit_losses("qmia")
    n_train = len(records.train)
    both = sklearn_frame(pd.concat([records.train, records.population], ignore_index=True))
    losses = np.concatenate(
        [loss_train[records.train_rows], loss_population[records.population_rows]]
    )
    rng = np.random.default_rng([seed, 0x0A11A])
    half = np.concatenate(
        [
            rng.permutation(np.arange(n_train) % 2),
            rng.permutation(np.arange(len(both) - n_train) % 2),
        ]
    )
    member = np.arange(len(both)) < n_train
    scores = np.empty(len(both))
    with threadpool_limits(limits=1):
        for k in (0, 1):
            fit = ~member & (half != k)
            scored = half == k
            scores[scored] = _standardised(
                both[fit], losses[fit], both[scored], losses[scored], seed + 2 * k
            )
    settings: JsonObject = {
        "score": "(loss - m(x)) / s(x), conditional median and median absolute deviation of "
        "the loss on population records",
        "regression": "HistGradientBoostingRegressor(loss='quantile', quantile=0.5) over the "
        "model's columns and the label",
        "population_halves": 2,
    }
    return Scores(scores[:n_train], scores[n_train:], settings)
