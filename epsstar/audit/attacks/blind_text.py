"""The blind baseline of a text audit: Epsilon* of a classifier that never sees the model.

:func:`blind_baseline` scores the training and population texts with the cross-fitted
bag-of-n-grams classifier of :mod:`epsstar.statistics.attacks.blind_text` and audits its
scores exactly like an attack's (:func:`~epsstar.audit.attacks.from_losses.audit_losses`):
Epsilon*, the held-out lower bound and the AUC. When the lower bound is above 0, the records
alone tell the two sides apart, so the premise of the audit (the population is a sample of
the training distribution) fails and the model's Epsilon* measures that difference too.

At most :data:`MAX_BLIND_RECORDS` records of each side are used (a seeded random sample,
stated in the record), which bounds the cost on large corpora.

How it plugs into the tabular blind baseline of the premise check: that check trains a
classifier on the table's columns; for a text audit it calls :func:`blind_baseline` (the
same inputs: the two sides' records, the audit's options) and records the same fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.attacks.from_losses import audit_losses
from epsstar.audit.attacks.prefixed_warnings import prefixed_warnings
from epsstar.audit.options import AuditOptions
from epsstar.audit.output.text_result import BlindBaseline
from epsstar.statistics.attacks.blind_text import BLIND_FOLDS, blind_text_scores
from epsstar.statistics.attacks.power import attack_auc

__all__ = ["MAX_BLIND_RECORDS", "blind_baseline", "blind_rows"]

#: Most records of each side the blind classifier is trained and scored on.
MAX_BLIND_RECORDS: Final = 20_000


def blind_rows(n: int, seed: int, side: int) -> NDArray[np.int64]:
    """The rows of a side of ``n`` records the baseline uses: all of them, or a seeded
    random :data:`MAX_BLIND_RECORDS`, sorted."""
    if n <= MAX_BLIND_RECORDS:
        return np.arange(n, dtype=np.int64)
    chosen = np.random.default_rng([seed, 0xB11D, side]).choice(n, MAX_BLIND_RECORDS, replace=False)
    return np.sort(chosen).astype(np.int64)


def blind_baseline(
    members: Sequence[str], nonmembers: Sequence[str], options: AuditOptions
) -> BlindBaseline:
    """The blind baseline's audit on the given training and population texts."""
    scores = blind_text_scores(members, nonmembers, folds=BLIND_FOLDS, seed=options.seed)
    no_gate = AuditOptions(
        delta=options.delta,
        method=options.method,
        family=options.family,
        confidence=options.confidence,
        seed=options.seed,
    )
    with prefixed_warnings("the blind baseline's scores: "):
        audited = audit_losses(scores.members, scores.nonmembers, utility={}, options=no_gate)
    return BlindBaseline(
        epsilon=audited.epsilon,
        lower_bound=audited.lower_bound,
        auc=attack_auc(scores.members, scores.nonmembers),
        classifier=scores.classifier,
        folds=scores.folds,
        n_members=len(members),
        n_nonmembers=len(nonmembers),
    )
