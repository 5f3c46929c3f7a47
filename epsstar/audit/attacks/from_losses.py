"""An audit's statistics from its two loss arrays: :func:`audit_losses`, with no I/O.

Given the per-record losses of a model on its training data and on population data,
:func:`audit_losses` computes

* the headline Epsilon* (by default the estimator's default method; any of
  :data:`epsstar.statistics.names.METHODS` by name, with an optional bootstrap
  interval) and the empirical Epsilon* (:mod:`epsstar.statistics.estimators.estimator`);
* a Clopper-Pearson lower bound on ε
  (:func:`epsstar.statistics.bounds.from_counts.epsilon_lower_bound`)
  that is statistically valid: each side is split in two at random (seeded); the
  test (threshold and direction) is chosen on one half and the errors are counted on
  the other, so the choice does not bias the counts
  (:func:`epsstar.statistics.bounds.held_out_bound.split_lower_bound`);
* the release gate's statistic under the chosen rule, with the exact held-out leak
  test's p-value (:mod:`epsstar.statistics.bounds.gate`);
* Epsilon* at δ from 10/n down to the chosen δ, each with the rates the data do not
  hold (:mod:`epsstar.statistics.estimators.delta_profile`);
* plain-language readings: the posterior-belief bound ρ_β of Epsilon*
  (Bernau et al. 2021, "Quantifying identifiability to choose and audit ε in differentially private
  deep learning"), the membership advantage (observed, max TPR − FPR, and the bound implied by
  (ε*, δ)), and the TPR of the loss attack at 0.1 % and 1 % FPR (observed, fitted, and the (ε*, δ)
  bound);

and returns them in an :class:`~epsstar.audit.output.result.AuditResult` together with the
model's utility and the provenance it is given, both computed by the caller
(:func:`epsstar.audit.run.audit` streams the data once for the losses and the utility).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from epsstar.audit.output.provenance import Provenance
from epsstar.audit.output.result import AuditResult
from epsstar.exceptions import InsufficientDataError, InvalidInputError
from epsstar.statistics._validation import (
    check_confidence,
    check_delta,
    check_in_range,
    check_positive_int,
)
from epsstar.statistics.bounds.gate import gate_statistic
from epsstar.statistics.bounds.held_out_bound import split_lower_bound
from epsstar.statistics.bounds.leak_test import held_out_leak_test
from epsstar.statistics.estimators.delta_profile import delta_grid, epsilon_by_delta
from epsstar.statistics.estimators.estimator import (
    MIN_PARAMETRIC_RECORDS,
    MIN_RECORDS,
    default_delta,
    epsilon_star,
    estimate,
    estimate_at_deltas,
)
from epsstar.statistics.estimators.methods import (
    Bootstrap,
    EstimatorConfig,
    TestedConfig,
    method_config,
)
from epsstar.statistics.names import (
    DEFAULT_GATE,
    DEFAULT_METHOD,
    GATES,
    METHODS,
    Family,
    GateRule,
    Method,
)
from epsstar.statistics.readings.readings import membership_readings
from epsstar.statistics.summaries.loss_summary import LossesLike, as_losses
from epsstar.statistics.summaries.protocols import Losses
from epsstar.statistics.utility import Utility

__all__ = ["AuditOptions", "audit_losses", "minimum_records"]


@dataclass(frozen=True, slots=True)
class AuditOptions:
    """The statistical settings of an audit, checked when the record is built.

    ``delta`` defaults to 1/(n ln n) with n the number of training losses (the Epsilon*
    paper's choice, §4.1). ``method`` chooses the headline estimator (``None``: the
    estimator's default); ``family`` the distribution of the parametric method;
    ``interval`` (a level such as 0.95) adds a bootstrap interval from ``n_bootstrap``
    resamples. ``max_epsilon`` is the release gate, ``confidence`` that of the lower
    bound, ``seed`` fixes every random choice.
    """

    delta: float | None = None
    method: Method | None = None
    family: Family = "normal"
    interval: float | None = None
    n_bootstrap: int = 200
    max_epsilon: float | None = None
    confidence: float = 0.95
    seed: int = 0
    gate: GateRule = DEFAULT_GATE

    def __post_init__(self) -> None:
        if self.delta is not None:
            object.__setattr__(self, "delta", check_delta(self.delta))
        if self.method is not None and self.method not in METHODS:
            raise InvalidInputError(
                f"method must be one of {', '.join(METHODS)}. Found {self.method!r}."
            )
        if self.interval is not None:
            check_in_range("interval", self.interval, 0.0, 1.0)
            check_positive_int("n_bootstrap", self.n_bootstrap, minimum=2)
        if self.max_epsilon is not None:
            limit = check_in_range(
                "max_epsilon", self.max_epsilon, 0.0, float("inf"), low_inclusive=True
            )
            object.__setattr__(self, "max_epsilon", limit)
        object.__setattr__(self, "confidence", check_confidence(self.confidence))
        GATES.check(self.gate)

    @property
    def headline_method(self) -> Method:
        """The method of the headline Epsilon*."""
        return DEFAULT_METHOD if self.method is None else self.method

    def estimator(self) -> EstimatorConfig:
        """The headline's configuration: a tested method's leak test at the gate's level
        ``1 - confidence``, so that the headline and the gate read one decision."""
        config = method_config(self.headline_method, family=self.family)
        if isinstance(config, TestedConfig):
            return dataclasses.replace(config, level=round(1.0 - self.confidence, 12))
        return config


def _checked_losses(
    train: LossesLike, population: LossesLike, method: Method
) -> tuple[Losses, Losses]:
    """Both sides' losses, finite 1-D float64 (or their summaries), with enough records for
    every estimate.

    A refusal names the minimum and, for another method, what ``--method empirical`` needs.
    """
    minimum = minimum_records(method)
    fewest = minimum_records("empirical")
    checked: list[Losses] = []
    for role, values in (("training", train), ("population", population)):
        losses = as_losses(values, f"{role} losses")
        size = losses.n
        if size < minimum:
            hint = ""
            if method != "empirical":
                runs = ", which these rows allow" if size >= fewest else ""
                hint = f"; --method empirical needs {fewest}{runs}"
            raise InsufficientDataError(
                f"the {role} data need at least {minimum} rows for the {method} "
                f"estimate and the lower bound{hint}. Found {size}."
            )
        checked.append(losses)
    return checked[0], checked[1]


def minimum_records(method: Method) -> int:
    """Fewest rows per side an audit with ``method`` accepts (the goodness-of-fit split of
    the lower bound and readings needs :data:`MIN_PARAMETRIC_RECORDS`)."""
    return max(MIN_PARAMETRIC_RECORDS, MIN_RECORDS[method])


def audit_losses(
    train_losses: LossesLike,
    population_losses: LossesLike,
    *,
    utility: Mapping[str, Utility],
    options: AuditOptions | None = None,
    provenance: Provenance | None = None,
) -> AuditResult:
    """The :class:`AuditResult` of two loss arrays (see the module docstring).

    ``utility`` holds the model's :class:`~epsstar.statistics.utility.Utility` per data
    set (``"population"``, ``"train"``), as computed by the caller, who ran the model;
    ``provenance`` (files, checksums, timings, command line) is recorded as given.
    Either side may be a :class:`~epsstar.statistics.summaries.loss_summary.LossSummary` (a data set
    too large to hold every loss) for the tails methods and the empirical one, without
    an interval; the result then keeps that side's random sample for its figures.
    """
    options = AuditOptions() if options is None else options
    method = options.headline_method
    train, population = _checked_losses(train_losses, population_losses, method)
    delta = default_delta(train.n) if options.delta is None else options.delta
    config = options.estimator()
    grid = delta_grid(delta, train.n)
    # One pass over the grid fits the tails (and runs tails-tested's leak test) once for the
    # whole profile; its last point, at the audit's δ, is the headline. A bootstrap interval
    # is the headline's own, so then the headline is estimated apart.
    if options.interval is None:
        along = estimate_at_deltas(train, population, config, grid, seed=options.seed)
        headline = along[-1]
    else:
        along = estimate_at_deltas(train, population, config, grid[:-1], seed=options.seed)
        headline = estimate(
            train,
            population,
            config,
            delta=delta,
            seed=options.seed,
            interval=Bootstrap(options.interval, options.n_bootstrap),
        )
        along = [*along, headline]
    leak = headline.leak_test or held_out_leak_test(train, population, seed=options.seed)

    lower_bound = split_lower_bound(
        train, population, delta=delta, confidence=options.confidence, seed=options.seed
    )
    return AuditResult(
        epsilon=headline,
        empirical=epsilon_star(train, population, delta=delta, method="empirical"),
        lower_bound=lower_bound,
        gate=gate_statistic(options.gate, headline.epsilon, lower_bound, leak),
        readings=membership_readings(train, population, headline),
        delta_profile=epsilon_by_delta(along),
        utility=dict(utility),
        provenance=provenance,
        max_epsilon=options.max_epsilon,
        # The losses an audit keeps for its figures: all of them, or a summary's sample.
        train_losses=train.sample,
        population_losses=population.sample,
        summaries={
            side: losses
            for side, losses in (("train", train), ("population", population))
            if losses.values is None
        },
    )
