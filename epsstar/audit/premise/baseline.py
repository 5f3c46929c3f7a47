"""The blind baseline of an audit: the blind classifier's scores through the same estimator.

:func:`blind_baseline` turns the cross-fitted log-likelihood ratios of
:mod:`.classifier` into scores oriented like losses (``-log-odds``: lower, more likely a
training row) and audits them as the loss attack is audited
(:func:`epsstar.audit.attacks.from_losses.audit_losses`): the blind Epsilon*, its held-out
Clopper-Pearson lower bound at the audit's confidence, and the AUC. The premise holds while
that lower bound is 0: a positive bound says the records alone tell the tables apart, at the
confidence the gate uses, so the model's Epsilon* measures that difference too.
"""

from __future__ import annotations

import dataclasses

from epsstar.audit.attacks.from_losses import AuditOptions, audit_losses
from epsstar.audit.attacks.prefixed_warnings import prefixed_warnings
from epsstar.audit.output.premise_result import BlindBaseline
from epsstar.audit.premise.classifier import CLASSIFIER, BlindLogOdds
from epsstar.exceptions import InsufficientDataError
from epsstar.statistics.attacks.power import attack_auc

__all__ = ["blind_baseline"]


def blind_baseline(log_odds: BlindLogOdds, options: AuditOptions) -> BlindBaseline:
    """The blind baseline's record (see the module docstring); with too few rows for the
    estimator, a record saying so."""
    members, others = -log_odds.train, -log_odds.population
    plain = dataclasses.replace(options, max_epsilon=None, interval=None)
    try:
        with prefixed_warnings("the blind baseline's scores: "):
            audited = audit_losses(members, others, utility={}, options=plain)
    except InsufficientDataError as error:
        return BlindBaseline.skipped_because(str(error))
    return BlindBaseline(
        epsilon=audited.epsilon,
        lower_bound=audited.lower_bound,
        auc=attack_auc(members, others),
        classifier=CLASSIFIER,
        folds=log_odds.folds,
        fitted_rows=log_odds.fitted,
    )
