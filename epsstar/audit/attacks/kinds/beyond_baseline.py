"""The model's leak beyond the blind baseline: the loss corrected by what the records alone
say about membership.

The blind classifier (:mod:`epsstar.audit.premise.classifier`) gives each record
``b(x) = log P(train | x) / P(population | x)`` (less the prior), without the model. When
``b`` is the true likelihood ratio, members and non-members with the same ``b`` have the same
distribution of records (the ratio of their densities is constant there), so they also have
the same distribution of losses unless the model memorised them. The score is therefore the
loss *ranked among population records with a similar blind score*: the share of population
records in the same bin of ``b`` (bins at the population's quantiles of ``b``, about
:data:`ROWS_PER_BIN` records each, at most :data:`MAX_BINS`) whose loss is at most the
record's. Without memorisation it is uniform for members and non-members alike, however
much the tables differ; a model that memorised gives its members low ranks. This is the
record-conditioned calibration of QMIA (Bertran et al. 2023) with the blind classifier's
score as the conditioning variable.

It is cross-fitted: the population is cut into two random halves and the members are
assigned to either at random; each half's records (members and non-members) are ranked
among the other half's population records, so no population record is ranked against
itself.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from epsstar.audit.attacks.attack import AttackParameters, Scores
from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.plumbing.records.json_types import JsonObject
from epsstar.statistics._validation import FloatArray

__all__ = ["MAX_BINS", "ROWS_PER_BIN", "beyond_baseline_scores"]

#: Population records per bin of the blind score (about), and the most bins.
ROWS_PER_BIN: Final = 100
MAX_BINS: Final = 20


def _ranks(
    reference_blind: FloatArray, reference_loss: FloatArray, blind: FloatArray, loss: FloatArray
) -> FloatArray:
    """Each record's share of reference records in its blind-score bin with loss ≤ its."""
    bins = int(np.clip(reference_blind.size // ROWS_PER_BIN, 1, MAX_BINS))
    edges = np.quantile(reference_blind, np.linspace(0, 1, bins + 1)[1:-1])
    reference_bin = np.searchsorted(edges, reference_blind, side="right")
    record_bin = np.searchsorted(edges, blind, side="right")
    ranks = np.empty(loss.size)
    for k in range(bins):
        pool = np.sort(reference_loss[reference_bin == k])
        mine = record_bin == k
        ranks[mine] = (np.searchsorted(pool, loss[mine], side="right") + 0.5) / (pool.size + 1)
    return ranks


def beyond_baseline_scores(inputs: AttackInputs, parameters: AttackParameters, seed: int) -> Scores:
    """The rank of each record's loss among population records of similar blind score."""
    name = "beyond-baseline"
    loss_train, loss_population = inputs.audit_losses(name)
    blind_train, blind_population = inputs.blind_log_odds(name)
    rng = np.random.default_rng([seed, 0xBEE])
    half_train = rng.permutation(np.arange(loss_train.size) % 2)
    half_population = rng.permutation(np.arange(loss_population.size) % 2)
    members = np.empty(loss_train.size)
    others = np.empty(loss_population.size)
    for k in (0, 1):
        reference = half_population != k
        ranks_of = (blind_population[reference], loss_population[reference])
        mine = half_train == k
        members[mine] = _ranks(*ranks_of, blind_train[mine], loss_train[mine])
        theirs = half_population == k
        others[theirs] = _ranks(*ranks_of, blind_population[theirs], loss_population[theirs])
    settings: JsonObject = {
        "score": "rank of the loss among population records in the same bin of the blind "
        "classifier's log-odds, cross-fitted over two halves of the population",
        "bins": int(np.clip((loss_population.size // 2) // ROWS_PER_BIN, 1, MAX_BINS)),
    }
    return Scores(members, others, settings)
