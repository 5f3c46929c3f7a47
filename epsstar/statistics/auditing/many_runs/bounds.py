"""The many-run audit: R runs with the canary, R without, and four ε lower bounds.

§III-C of Nasr et al. 2021, "Adversary Instantiation: Lower Bounds for Differentially Private
Machine Learning": train R models with the canary and R without, score the canary in each (its loss,
or a stronger score), and call "with the canary" the runs on one side of a threshold. The threshold
and the side are chosen on half of the runs and the errors counted on the other half
(:func:`~epsstar.statistics.bounds.held_out_bound.split_lower_bound`; the seeded split on its own is
:func:`split_runs`), so the counts are those of a test fixed in advance. From the false positives FP
of N runs without the canary and false negatives FN of P runs with it:

* ``clopper_pearson``: Nasr et al., eq. 5, with Clopper–Pearson upper bounds of both rates
  (:func:`~epsstar.statistics.bounds.from_counts.epsilon_lower_bound`); exact, conservative.
* ``gdp_clopper_pearson``: the μ⁻ = Φ^{-1}(1 − α⁺) − Φ^{-1}(β⁺) of Nasr et al. 2023 ("Tight
  Auditing of Differentially Private Machine Learning") from the same upper bounds
  (:func:`~epsstar.statistics.readings.conversions.gdp_mu_lower_bound`) and its ε at δ
  (:func:`~epsstar.statistics.readings.conversions.gdp_epsilon`); it refutes Gaussian trade-off
  curves and needs far fewer runs.
* ``bayesian_beta`` and ``log_katz``: :mod:`.intervals`.

Each bound holds (or, for the Bayesian one, is credible) at ``confidence``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Final

import numpy as np
from numpy.typing import ArrayLike

from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.statistics._validation import FloatArray, check_confidence, check_delta, finite_vector
from epsstar.statistics.auditing.many_runs.intervals import (
    _check_prior,
    bayesian_epsilon_lower_bound,
    log_katz_epsilon_lower_bound,
)
from epsstar.statistics.bounds.from_counts import _check_error_counts, epsilon_lower_bound
from epsstar.statistics.bounds.held_out_bound import held_out_halves, split_lower_bound
from epsstar.statistics.readings.conversions import gdp_epsilon, gdp_mu_lower_bound
from epsstar.statistics.summaries.loss_sketch import Sample
from epsstar.statistics.summaries.loss_values import LossValues

__all__ = [
    "MANY_RUN_METHODS",
    "ManyRunBounds",
    "MethodBound",
    "RunSplit",
    "audit_many_runs",
    "many_run_bounds",
    "split_runs",
]

#: The many-run bounds, in the order of :meth:`ManyRunBounds.table`.
MANY_RUN_METHODS: Final = ("clopper_pearson", "gdp_clopper_pearson", "bayesian_beta", "log_katz")


@dataclass(frozen=True, slots=True)
class MethodBound(JsonRecord):
    """One row of the comparison table: a method, its ε lower bound and what it promises."""

    method: str
    epsilon_lower: float | None
    guarantee: str


@dataclass(frozen=True, slots=True)
class ManyRunBounds(JsonRecord):
    """The four many-run bounds from one set of error counts (see the module).

    ``false_positives`` of ``negatives`` runs without the canary were called "with", and
    ``false_negatives`` of ``positives`` runs with it were called "without". ``mu_lower`` is
    μ⁻ and ``epsilon_gdp`` its ε at ``delta`` (``None`` when δ = 0). ``threshold`` and
    ``direction`` name the test when it was chosen from scores (``None`` for bare counts);
    ``prior`` is the Beta prior of the Bayesian bound. The JSON holds the four bounds once,
    as the rows of :meth:`table` (``bounds``).
    """

    false_positives: int
    negatives: int
    false_negatives: int
    positives: int
    delta: float
    confidence: float
    epsilon_clopper_pearson: float = field(metadata=json_rule(skip=True))
    mu_lower: float
    epsilon_gdp: float | None = field(metadata=json_rule(skip=True))
    epsilon_bayesian: float = field(metadata=json_rule(skip=True))
    epsilon_log_katz: float = field(metadata=json_rule(skip=True))
    prior: tuple[float, float] = (1.0, 1.0)
    threshold: float | None = None
    direction: str | None = None

    def table(self) -> tuple[MethodBound, ...]:
        """The four bounds as rows, for a benchmark's comparison table."""
        return (
            MethodBound(MANY_RUN_METHODS[0], self.epsilon_clopper_pearson, "exact"),
            MethodBound(MANY_RUN_METHODS[1], self.epsilon_gdp, "exact for Gaussian curves"),
            MethodBound(MANY_RUN_METHODS[2], self.epsilon_bayesian, "credible (posterior)"),
            MethodBound(MANY_RUN_METHODS[3], self.epsilon_log_katz, "asymptotic"),
        )

    @json_property(name="bounds")
    def _bounds(self) -> tuple[MethodBound, ...]:
        """The JSON's ``bounds``: the rows of :meth:`table`."""
        return self.table()


@dataclass(frozen=True, slots=True)
class RunSplit:
    """The runs split for choosing the test (``selection_*``, sorted) and for counting its
    errors (``evaluation_*``), each side shuffled (seeded) and halved."""

    selection_with: FloatArray
    selection_without: FloatArray
    evaluation_with: FloatArray
    evaluation_without: FloatArray


def _values(half: Sample) -> FloatArray:
    """A half of held values (a :class:`LossSketch` only comes from a summary, never here)."""
    if isinstance(half, LossValues):
        return half.values
    if not isinstance(half, np.ndarray):
        raise TypeError("split_runs halves held values only.")
    return half


def split_runs(scores_with: ArrayLike, scores_without: ArrayLike, *, seed: int = 0) -> RunSplit:
    """Split the runs as :func:`audit_many_runs` does with the same ``seed``.

    The split of :func:`~epsstar.statistics.bounds.held_out_bound.held_out_halves`: each side
    is shuffled with a generator seeded by ``seed`` and halved (the selection half gets
    ⌊n/2⌋ runs); the test is chosen on the selection halves only.
    """
    with_canary = finite_vector("scores_with", scores_with, min_size=2)
    without_canary = finite_vector("scores_without", scores_without, min_size=2)
    (select_with, select_without), (eval_with, eval_without) = held_out_halves(
        with_canary, without_canary, seed=seed
    )
    return RunSplit(
        selection_with=_values(select_with),
        selection_without=_values(select_without),
        evaluation_with=_values(eval_with),
        evaluation_without=_values(eval_without),
    )


def many_run_bounds(
    false_positives: int,
    negatives: int,
    false_negatives: int,
    positives: int,
    *,
    delta: float,
    confidence: float = 0.95,
    prior: tuple[float, float] = (1.0, 1.0),
) -> ManyRunBounds:
    """All four many-run bounds from error counts (see the module)."""
    fp, n_neg, fn, n_pos = _check_error_counts(
        false_positives, negatives, false_negatives, positives
    )
    d = check_delta(delta, allow_zero=True)
    return _bounds(fp, n_neg, fn, n_pos, d, check_confidence(confidence), _check_prior(prior))


def _bounds(
    fp: int, n_neg: int, fn: int, n_pos: int, d: float, level: float, beliefs: tuple[float, float]
) -> ManyRunBounds:
    """:func:`many_run_bounds` of counts, δ, confidence and prior its callers checked."""
    mu = gdp_mu_lower_bound(fp, n_neg, fn, n_pos, level)
    return ManyRunBounds(
        false_positives=fp,
        negatives=n_neg,
        false_negatives=fn,
        positives=n_pos,
        delta=d,
        confidence=level,
        epsilon_clopper_pearson=epsilon_lower_bound(
            fp, n_neg, fn, n_pos, delta=d, confidence=level
        ).epsilon,
        mu_lower=mu,
        epsilon_gdp=gdp_epsilon(d, mu) if d > 0.0 else None,
        epsilon_bayesian=bayesian_epsilon_lower_bound(
            fp, n_neg, fn, n_pos, delta=d, confidence=level, prior=beliefs
        ),
        epsilon_log_katz=log_katz_epsilon_lower_bound(
            fp, n_neg, fn, n_pos, delta=d, confidence=level
        ),
        prior=beliefs,
    )


def audit_many_runs(
    scores_with: ArrayLike,
    scores_without: ArrayLike,
    *,
    delta: float,
    confidence: float = 0.95,
    seed: int = 0,
    prior: tuple[float, float] = (1.0, 1.0),
) -> ManyRunBounds:
    """Choose the test on half of the runs, count its errors on the other half, bound ε.

    ``scores_with`` holds the canary's score in each run trained with it, ``scores_without``
    in each run trained without. Scores are read like losses by the split (the test calls a
    run "with the canary" below the threshold, ``members_lower``, or above it,
    ``members_higher``, whichever the selection half favours), so either orientation works.
    Each side needs at least 2 runs; :func:`~.feasibility.smallest_run_count` says how many
    evaluation runs (about half of each side) could refute a claim at all.
    """
    with_canary = finite_vector("scores_with", scores_with, min_size=2)
    without_canary = finite_vector("scores_without", scores_without, min_size=2)
    d = check_delta(delta, allow_zero=True)
    level = check_confidence(confidence)
    beliefs = _check_prior(prior)
    chosen = split_lower_bound(with_canary, without_canary, delta=d, confidence=level, seed=seed)
    counted = _bounds(
        chosen.false_positives,
        chosen.negatives,
        chosen.false_negatives,
        chosen.positives,
        d,
        level,
        beliefs,
    )
    return replace(counted, threshold=chosen.threshold, direction=chosen.direction)
