"""What an audit's statistics are asked for: :class:`AuditOptions`, checked when built.

The one record of the audit's statistical settings, which the command line, the Python API,
the attacks, the premise and the runs of many models all read; it imports nothing of the
audit, so every room may use it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from epsstar.plumbing.records.constraints import (
    InRange,
    Maybe,
    OneOf,
    WholeNumber,
    check_fields,
    constraint,
)
from epsstar.statistics._validation import DELTA
from epsstar.statistics.estimators.methods import EstimatorConfig, TestedConfig, method_config
from epsstar.statistics.names import (
    DEFAULT_GATE,
    DEFAULT_METHOD,
    FAMILIES,
    GATES,
    METHODS,
    Family,
    GateRule,
    Method,
)

__all__ = ["AuditOptions"]


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

    delta: float | None = field(default=None, metadata=constraint(Maybe(DELTA)))
    method: Method | None = field(default=None, metadata=constraint(Maybe(OneOf(METHODS))))
    family: Family = field(default="normal", metadata=constraint(OneOf(FAMILIES)))
    interval: float | None = field(default=None, metadata=constraint(Maybe(InRange(0.0, 1.0))))
    n_bootstrap: int = field(default=200, metadata=constraint(WholeNumber(minimum=2)))
    max_epsilon: float | None = field(
        default=None, metadata=constraint(Maybe(InRange(0.0, float("inf"), closed="left")))
    )
    confidence: float = field(default=0.95, metadata=constraint(InRange(0.0, 1.0)))
    seed: int = field(default=0, metadata=constraint(WholeNumber(minimum=0)))
    gate: GateRule = field(default=DEFAULT_GATE, metadata=constraint(OneOf(GATES)))

    def __post_init__(self) -> None:
        check_fields(self)

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
