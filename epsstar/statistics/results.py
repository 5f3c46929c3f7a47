"""Frozen result objects and their JSON form (a public contract for pipelines).

The JSON documents that hold an Epsilon* result add what the statistics do not know, such
as the ``epsstar_version`` that wrote them (``epsstar epsilon --json``, the audit's
``empirical``); the result's own ``to_dict()`` holds what it knows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.plumbing.records.json_types import JsonObject
from epsstar.statistics.bounds.leak_test import LeakTest
from epsstar.statistics.fitting.base import FittedDistribution
from epsstar.statistics.fitting.goodness_of_fit import GoodnessOfFit
from epsstar.statistics.transform import LossTransform

__all__ = ["BootstrapInterval", "EpsilonStarResult", "FitReport"]


@dataclass(frozen=True, slots=True)
class BootstrapInterval(JsonRecord):
    """A bootstrap confidence interval for Epsilon* and the replicates' summary."""

    low: float
    high: float
    level: float
    kind: str
    n_bootstrap: int
    replicate_mean: float
    replicate_sd: float


@dataclass(frozen=True, slots=True)
class FitReport(JsonRecord):
    """One side's fitted distribution (in transformed units) and its goodness of fit."""

    fit: FittedDistribution = field(metadata=json_rule(flatten=True))
    goodness_of_fit: GoodnessOfFit


@dataclass(frozen=True, slots=True)
class EpsilonStarResult(JsonRecord):
    """Epsilon* of one model instance, where it is attained, and how it was estimated.

    ``fpr``/``fnr``/``threshold`` locate the maximising test (``threshold`` in loss
    units; the test calls a record a member when its loss is ≤ threshold). They
    are NaN when Epsilon* = 0 comes from the constant 1 of eq. 7, i.e. no
    admissible test beats random guessing.
    """

    epsilon: float = field(metadata=json_rule(name="epsilon_star"))
    delta: float
    method: str
    family: str | None
    fpr: float
    fnr: float
    threshold: float
    threshold_transformed: float | None
    attained_by: str
    n_train: int
    n_population: int
    rate_window: tuple[float, float]
    fits: Mapping[str, FitReport] = field(default_factory=dict, metadata=json_rule(name="fit"))
    transform: LossTransform | None = None
    #: The tails methods: each side's tail model (thresholds, exponents, pooled reference),
    #: as its JSON.
    tail_fits: Mapping[str, JsonObject] = field(
        default_factory=dict, metadata=json_rule(name="tail_fit", empty_as_none=True)
    )
    #: Bootstrap confidence interval for Epsilon*, when one was asked for.
    interval: BootstrapInterval | None = field(
        default=None, metadata=json_rule(name="epsilon_star_interval")
    )
    #: ``method="tails-crossfit"``: the full-sample (selected and scored on the same
    #: data) estimate, and the cross-fitted score of each ratio of eq. 7, whose
    #: largest is ``epsilon``.
    plug_in_epsilon: float | None = field(
        default=None, metadata=json_rule(name="plug_in_epsilon_star")
    )
    crossfit_scores: tuple[float, ...] = field(default=(), metadata=json_rule(empty_as_none=True))
    #: Why the estimate differs from what the method would normally do (e.g. discrete losses).
    note: str | None = None
    #: ``method="tails-tested"``: the held-out leak test, and the cross-fitted estimate
    #: before the test (Epsilon* is it when the test finds a leak, else 0).
    leak_test: LeakTest | None = field(default=None, metadata=json_rule(skip=True))
    untested_epsilon: float | None = field(
        default=None, metadata=json_rule(name="untested_epsilon_star")
    )
    seed: int = field(kw_only=True)

    @json_property(after="note")
    def leak_p_value(self) -> float | None:
        """``method="tails-tested"``: the held-out leak test's p-value."""
        return None if self.leak_test is None else self.leak_test.p_value

    @json_property(after="rate_window")
    def poor_fit(self) -> bool:
        """A goodness-of-fit test rejected the fit of either side."""
        return any(report.goodness_of_fit.poor_fit for report in self.fits.values())

    @json_property(after="rate_window")
    def tail_extrapolated(self) -> bool:
        """Any of :attr:`unsupported_rates`: Epsilon* rests on an extrapolated tail."""
        return bool(self.unsupported_rates)

    @json_property(after="rate_window")
    def unsupported_rates(self) -> tuple[str, ...]:
        """The maximising test's rates that lie below one record's worth of data.

        Each corner of the trade-off is checked against the side that counts it: FPR and
        1 − FPR against 1/m (m population records), FNR and 1 − FNR against 1/n (n
        training records). Eq. 7 has a ratio with each of them as denominator, so
        Epsilon* can be attained in any of the four. Such a rate is not observed: it is
        the fitted distribution's tail, extrapolated beyond the data.
        """
        m, n = self.n_population, self.n_train
        checks = (
            ("FPR", self.fpr * m),
            ("FNR", self.fnr * n),
            ("1-FPR", (1.0 - self.fpr) * m),
            ("1-FNR", (1.0 - self.fnr) * n),
        )
        return tuple(name for name, records in checks if records < 1)
