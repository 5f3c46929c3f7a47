"""The blind baseline of an audit: the blind classifier's scores through the same estimator.

:func:`blind_baseline` turns the cross-fitted log-likelihood ratios of :mod:`.classifier`
into scores oriented like losses (``-log-odds``: lower, more likely a training row) and
reads them as the headline of the loss attack is read, at the audit's δ: Epsilon* by the
audit's method (:func:`epsstar.statistics.estimators.estimator.estimate`, one δ, not the
profile of five; by ``tails-tested``, the cross-fitted estimate is computed only when the
leak test finds a leak, since Epsilon* is 0 otherwise and the untested figure is not
reported), its held-out Clopper-Pearson lower bound
(:func:`epsstar.statistics.bounds.held_out_bound.split_lower_bound`), and the AUC.

The premise holds while no test of :mod:`epsstar.statistics.bounds.premise_tests` flags the
tables: the blind lower bound above 0, the blind scores' ranks, the label frequencies, the
exact repeats, each at a quarter of ``1 - confidence`` (Bonferroni), so two tables from one
distribution are flagged at most ``1 - confidence`` of the time. The lower bound is
therefore read at confidence ``1 - (1 - confidence) / 4`` (0.9875 for the default 0.95), and
the JSON's ``confidence`` says so. An audit with a release gate reads the premise at
:data:`GATE_PREMISE_CONFIDENCE` (0.99; each test at 0.0025) unless its own confidence is
higher, so that the gate's exit 4 does not cry wolf. The lower bound alone missed a class
mix changed by 10 points in 99 of 100 repeats (docs/premise.md): a shift that moves every
record a little is one the threshold test of one tail cannot see at those sizes, while the
test of the class counts sees it in every repeat. Because the scores are cross-fitted (no
row is scored by a classifier that saw it), members' and non-members' scores are
exchangeable within a fold when both tables come from one distribution, and the tests'
guarantees hold. The estimator's warnings about the blind scores (a poor fit, an
extrapolated tail) are not raised: the premise is read from the tests, which need no fit.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Final

import numpy as np
from numpy.typing import ArrayLike

from epsstar.audit.attacks.from_losses import minimum_records
from epsstar.audit.options import AuditOptions
from epsstar.audit.output.premise_result import BlindBaseline
from epsstar.audit.premise.classifier import CLASSIFIER, BlindLogOdds
from epsstar.exceptions import InsufficientDataError
from epsstar.statistics.attacks.power import attack_auc
from epsstar.statistics.bounds.from_counts import EpsilonLowerBound
from epsstar.statistics.bounds.held_out_bound import split_lower_bound
from epsstar.statistics.bounds.premise_tests import (
    TESTS,
    PremiseTest,
    fold_rank_p_value,
    label_p_value,
    premise_verdict,
)
from epsstar.statistics.bounds.repeats_test import repeats_p_value
from epsstar.statistics.estimators.estimator import estimate
from epsstar.statistics.estimators.methods import TestedConfig

__all__ = [
    "GATE_PREMISE_CONFIDENCE",
    "Labels",
    "blind_baseline",
    "premise_confidence",
    "premise_tests",
]

#: The premise's confidence in an audit with a release gate (``max_epsilon``), unless the
#: audit's own is higher. A failed premise stops the gate (exit 4), and a gate that stops
#: one release in twenty whose tables come from one distribution teaches its users to
#: override it; at 0.99 it stops at most one in a hundred (docs/premise.md, *The gate*).
GATE_PREMISE_CONFIDENCE: Final = 0.99

#: The labels of the scored records, training then population (``None``: not tested).
Labels = tuple[ArrayLike, ArrayLike] | None


def premise_tests(
    log_odds: BlindLogOdds, options: AuditOptions, *, delta: float, labels: Labels = None
) -> tuple[EpsilonLowerBound, tuple[PremiseTest, ...]]:
    """The blind lower bound at ``delta`` and the tests of the premise (see the module
    docstring); raises :class:`~epsstar.exceptions.InsufficientDataError` with too few
    rows for the bound."""
    members, others = -log_odds.train, -log_odds.population
    # The lower bound is one of TESTS tests of the premise, each at (1 - confidence) / TESTS.
    confidence = 1 - (1 - options.confidence) / TESTS
    bound = split_lower_bound(
        members, others, delta=delta, confidence=confidence, seed=options.seed
    )
    folds = log_odds.fold_of or (np.zeros(members.size, np.int64), np.zeros(others.size, np.int64))
    ranks = fold_rank_p_value(log_odds.train, log_odds.population, *folds)
    mix = 1.0 if labels is None else label_p_value(*labels, seed=options.seed)
    groups = log_odds.groups
    repeats = 1.0 if groups is None else repeats_p_value(*groups, seed=options.seed)
    alpha = 1 - options.confidence
    return bound, premise_verdict(
        bound.epsilon > 0, ranks=ranks, labels=mix, repeats=repeats, alpha=alpha
    )


def premise_confidence(options: AuditOptions) -> float:
    """The confidence the premise is read at: the audit's, or with a release gate
    :data:`GATE_PREMISE_CONFIDENCE` if higher."""
    if options.max_epsilon is None:
        return options.confidence
    return max(options.confidence, GATE_PREMISE_CONFIDENCE)


def blind_baseline(
    log_odds: BlindLogOdds, options: AuditOptions, *, delta: float, labels: Labels = None
) -> BlindBaseline:
    """The blind baseline's record at ``delta`` (see the module docstring); with too few
    rows for the estimator, a record saying so. ``labels``: the labels of the records the
    classifier scored (training, population), for the test of the class mix (``None``:
    not tested). With a release gate, the tests are read at :func:`premise_confidence`."""
    options = dataclasses.replace(options, confidence=premise_confidence(options))
    members, others = -log_odds.train, -log_odds.population
    method = options.headline_method
    fewest = minimum_records(method)
    if min(members.size, others.size) < fewest:
        return BlindBaseline.skipped_because(
            f"the {method} estimate needs at least {fewest} rows per side. Found "
            f"{members.size} training and {others.size} population rows."
        )
    config = options.estimator()
    if isinstance(config, TestedConfig):
        # Epsilon* only is reported: no cross-fitted estimate when no leak is found.
        config = dataclasses.replace(config, untested=False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            epsilon = estimate(members, others, config, delta=delta, seed=options.seed)
            bound, tests = premise_tests(log_odds, options, delta=delta, labels=labels)
    except InsufficientDataError as error:
        return BlindBaseline.skipped_because(str(error))
    return BlindBaseline(
        epsilon=epsilon,
        lower_bound=bound,
        auc=attack_auc(members, others),
        classifier=CLASSIFIER,
        folds=log_odds.folds,
        fitted_rows=log_odds.fitted,
        tests=tests,
    )
