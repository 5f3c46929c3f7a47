"""The blind baseline of an audit: the blind classifier's scores through the same estimator.

:func:`blind_baseline` turns the cross-fitted log-likelihood ratios of :mod:`.classifier`
into scores oriented like losses (``-log-odds``: lower, more likely a training row) and
reads them as the headline of the loss attack is read, at the audit's δ: Epsilon* by the
audit's method (:func:`epsstar.statistics.estimators.estimator.estimate`, one δ, not the
profile of five), its held-out Clopper-Pearson lower bound at the audit's confidence
(:func:`epsstar.statistics.bounds.held_out_bound.split_lower_bound`), and the AUC. The
premise holds while that lower bound is 0: a positive bound says the records alone tell the
tables apart, at the confidence the gate uses, so the model's Epsilon* measures that
difference too. Because the scores are cross-fitted (no row is scored by a classifier that
saw it), members' and non-members' scores are exchangeable when both tables come from one
distribution, and the bound's guarantee (false alarms at most ``1 - confidence``) holds.
The estimator's warnings about the blind scores (a poor fit, an extrapolated tail) are not
raised: the premise is read from the lower bound, which needs no fit.
"""

from __future__ import annotations

import warnings

from epsstar.audit.attacks.from_losses import AuditOptions, minimum_records
from epsstar.audit.output.premise_result import BlindBaseline
from epsstar.audit.premise.classifier import CLASSIFIER, BlindLogOdds
from epsstar.exceptions import InsufficientDataError
from epsstar.statistics.attacks.power import attack_auc
from epsstar.statistics.bounds.held_out_bound import split_lower_bound
from epsstar.statistics.estimators.estimator import estimate
from epsstar.statistics.estimators.methods import method_config

__all__ = ["blind_baseline"]


def blind_baseline(log_odds: BlindLogOdds, options: AuditOptions, *, delta: float) -> BlindBaseline:
    """The blind baseline's record at ``delta`` (see the module docstring); with too few
    rows for the estimator, a record saying so."""
    members, others = -log_odds.train, -log_odds.population
    method = options.headline_method
    fewest = minimum_records(method)
    if min(members.size, others.size) < fewest:
        return BlindBaseline.skipped_because(
            f"the {method} estimate needs at least {fewest} rows per side. Found "
            f"{members.size} training and {others.size} population rows."
        )
    config = method_config(method, family=options.family)
    seed, confidence = options.seed, options.confidence
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            epsilon = estimate(members, others, config, delta=delta, seed=seed)
            bound = split_lower_bound(
                members, others, delta=delta, confidence=confidence, seed=seed
            )
    except InsufficientDataError as error:
        return BlindBaseline.skipped_because(str(error))
    return BlindBaseline(
        epsilon=epsilon,
        lower_bound=bound,
        auc=attack_auc(members, others),
        classifier=CLASSIFIER,
        folds=log_odds.folds,
        fitted_rows=log_odds.fitted,
    )
