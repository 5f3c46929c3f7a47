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

from collections.abc import Mapping

from epsstar.audit.options import AuditOptions
from epsstar.audit.output.provenance import Provenance
from epsstar.audit.output.result import AuditResult
from epsstar.exceptions import InsufficientDataError
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
)
from epsstar.statistics.names import (
    Method,
)
from epsstar.statistics.readings.readings import membership_readings
from epsstar.statistics.summaries.loss_summary import LossesLike, as_losses
from epsstar.statistics.summaries.protocols import Losses
from epsstar.statistics.utility import Utility

__all__ = ["audit_losses", "minimum_records"]


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
