"""Frozen result objects and their JSON form (a public contract for pipelines).

The JSON documents that hold an Epsilon* result add what the statistics do not know, such
as the ``epsstar_version`` that wrote them (``epsstar epsilon --json``, the audit's
``empirical``); the result's own ``to_dict()`` holds what it knows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from epsstar.statistics.bounds.leak_test import LeakTest
from epsstar.statistics.estimators.bootstrap import BootstrapInterval
from epsstar.statistics.fitting.base import FittedDistribution
from epsstar.statistics.fitting.goodness_of_fit import GoodnessOfFit
from epsstar.statistics.json_types import JsonObject
from epsstar.statistics.transform import LossTransform

__all__ = ["EpsilonStarResult", "FitReport", "json_number"]


def json_number(value: float | None) -> float | None:
    """A float for JSON: NaN and infinities become ``None`` (JSON has no NaN)."""
    if value is None or not math.isfinite(value):
        return None
    return float(value)


@dataclass(frozen=True, slots=True)
class FitReport:
    """One side's fitted distribution (in transformed units) and its goodness of fit."""

    fit: FittedDistribution
    goodness_of_fit: GoodnessOfFit

    def to_dict(self) -> JsonObject:
        return {**self.fit.to_dict(), "goodness_of_fit": self.goodness_of_fit.to_dict()}


@dataclass(frozen=True, slots=True)
class EpsilonStarResult:
    """Epsilon* of one model instance, where it is attained, and how it was estimated.

    ``fpr``/``fnr``/``threshold`` locate the maximising test (``threshold`` in loss
    units; the test calls a record a member when its loss is ≤ threshold). They
    are NaN when Epsilon* = 0 comes from the constant 1 of eq. 7, i.e. no
    admissible test beats random guessing.
    """

    epsilon: float
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
    seed: int
    transform: LossTransform | None = None
    fits: Mapping[str, FitReport] = field(default_factory=dict)
    #: The tails methods: each side's tail model (thresholds, exponents, pooled reference),
    #: as its JSON.
    tail_fits: Mapping[str, JsonObject] = field(default_factory=dict)
    #: Bootstrap confidence interval for Epsilon*, when one was asked for.
    interval: BootstrapInterval | None = None
    #: ``method="tails-crossfit"``: the full-sample (selected and scored on the same
    #: data) estimate, and the cross-fitted score of each ratio of eq. 7, whose
    #: largest is ``epsilon``.
    plug_in_epsilon: float | None = None
    crossfit_scores: tuple[float, ...] = ()
    #: Why the estimate differs from what the method would normally do (e.g. discrete losses).
    note: str | None = None
    #: ``method="tails-tested"``: the held-out leak test, and the cross-fitted estimate
    #: before the test (Epsilon* is it when the test finds a leak, else 0).
    leak_test: LeakTest | None = None
    untested_epsilon: float | None = None

    @property
    def leak_p_value(self) -> float | None:
        """``method="tails-tested"``: the held-out leak test's p-value."""
        return None if self.leak_test is None else self.leak_test.p_value

    @property
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

    @property
    def tail_extrapolated(self) -> bool:
        """Any of :attr:`unsupported_rates`: Epsilon* rests on an extrapolated tail."""
        return bool(self.unsupported_rates)

    @property
    def poor_fit(self) -> bool:
        """A goodness-of-fit test rejected the fit of either side."""
        return any(report.goodness_of_fit.poor_fit for report in self.fits.values())

    def to_dict(self) -> JsonObject:
        """The JSON form; the document that holds it adds ``epsstar_version``."""
        return {
            "epsilon_star": self.epsilon,
            "delta": self.delta,
            "method": self.method,
            "family": self.family,
            "fpr": json_number(self.fpr),
            "fnr": json_number(self.fnr),
            "threshold": json_number(self.threshold),
            "threshold_transformed": json_number(self.threshold_transformed),
            "attained_by": self.attained_by,
            "n_train": self.n_train,
            "n_population": self.n_population,
            "rate_window": list(self.rate_window),
            "poor_fit": self.poor_fit,
            "tail_extrapolated": self.tail_extrapolated,
            "unsupported_rates": list(self.unsupported_rates),
            "fit": {side: report.to_dict() for side, report in self.fits.items()},
            "transform": self.transform.to_dict() if self.transform else None,
            "tail_fit": {side: dict(fit) for side, fit in self.tail_fits.items()} or None,
            "epsilon_star_interval": self.interval.to_dict() if self.interval else None,
            "plug_in_epsilon_star": json_number(self.plug_in_epsilon),
            "crossfit_scores": list(self.crossfit_scores) or None,
            "note": self.note,
            "leak_p_value": self.leak_p_value,
            "untested_epsilon_star": json_number(self.untested_epsilon),
            "seed": self.seed,
        }
