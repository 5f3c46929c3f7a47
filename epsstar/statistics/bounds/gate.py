"""What a release gate compares with its limit, for each rule of ``--gate``.

- ``"estimate"``: the Epsilon* estimate itself.
- ``"lower-bound"``: the held-out Clopper–Pearson bound
  (:func:`epsstar.statistics.bounds.held_out_bound.split_lower_bound`). The bound lies
  below the true ratio of eq. 7 (Negoescu et al. 2024, "Epsilon*: Privacy Metric for Machine
  Learning Models") at the test it counts, hence below the model's true Epsilon*, except with
  probability at most ``1 - confidence``: a gate on it fails a model whose true Epsilon* is within
  the limit no more often than that, for any losses.
- ``"significant"``: the estimate, counted only when the held-out exact leak test
  (:mod:`epsstar.statistics.bounds.leak_test`) rejects "no leak" at the level
  ``1 - confidence``; else 0. When both loss sets come from one distribution the
  test rejects with probability at most that level, so the gate fails at most that
  often, whatever the shape of the losses.

A statistic never stays below the lower bound. The bound is valid for any losses, so an
estimate below it is an underestimate at that confidence (an estimator that drops rates
below δ, losses on a few values summarised on a grid): under ``"estimate"``, and under
``"significant"`` once the leak test has found a leak, the gate compares the larger of the
estimate and the bound (``raised_to_lower_bound``). Without a leak found, ``"significant"``
stays at 0, which keeps its false-alarm rate at the test's level.

Several membership tests (attacks) on one model: the gate compares the largest of their
statistics with the limit (:func:`gate_over_tests`), each test's leak test at level
``(1 - confidence)/m`` and each lower bound at confidence ``1 - (1 - confidence)/m`` for
m tests (Bonferroni), so that the gate fails a model without a leak no more often than
with one test.

The three rules' false-alarm rates and power are measured by
``benchmarks/release_gate.py`` (``docs/release-gate.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.statistics._validation import check_confidence
from epsstar.statistics.bounds.from_counts import EpsilonLowerBound
from epsstar.statistics.bounds.leak_test import LeakTest
from epsstar.statistics.names import GATES, GateRule

__all__ = ["GateStatistic", "TestedStatistic", "gate_over_tests", "gate_statistic"]


@dataclass(frozen=True, slots=True)
class GateStatistic(JsonRecord):
    """The value a gate of ``rule`` compares with its limit, and the held-out leak test."""

    #: The estimate lay below the lower bound, so ``value`` is the bound (module doc); its
    #: JSON key is written, first, only then.
    raised_to_lower_bound: bool = field(
        default=False, kw_only=True, metadata=json_rule(omit_if_default=True)
    )
    rule: GateRule
    value: float = field(metadata=json_rule(name="statistic"))
    level: float
    leak: LeakTest = field(metadata=json_rule(name="leak_test"))
    #: With several tests, the one whose statistic is the largest, and how many there were.
    test: str | None = None
    n_tests: int = 1

    @json_property(after="value")
    def leak_p_value(self) -> float:
        return self.leak.p_value

    @json_property(after="value")
    def leak_found(self) -> bool:
        """The held-out exact test rejects "no leak" at ``level``."""
        return self.leak_p_value < self.level


def gate_statistic(
    rule: GateRule, estimate: float, bound: EpsilonLowerBound, leak: LeakTest
) -> GateStatistic:
    """The statistic of ``rule`` (module doc); the leak test's level is ``1 - confidence``
    of the bound. An estimate below the bound is raised to it (except by ``"significant"``
    when no leak is found)."""
    name = GATES.check(rule)
    level = round(1.0 - check_confidence(bound.confidence), 12)
    counted = name == "estimate" or (name == "significant" and leak.p_value < level)
    value = estimate if counted else 0.0
    if name == "lower-bound":
        value = bound.epsilon
    raised = counted and bound.epsilon > estimate
    return GateStatistic(
        rule=name,
        value=bound.epsilon if raised else value,
        level=level,
        leak=leak,
        raised_to_lower_bound=raised,
    )


@dataclass(frozen=True, slots=True)
class TestedStatistic:
    """One membership test's inputs to a gate over several: its name, its Epsilon*
    estimate, its leak test, and its lower bound at the gate's per-test confidence."""

    name: str
    estimate: float
    leak: LeakTest
    bound: EpsilonLowerBound


def gate_over_tests(rule: GateRule, tests: list[TestedStatistic]) -> GateStatistic:
    """The largest statistic of ``rule`` over ``tests``, each computed as by
    :func:`gate_statistic` with the level of its bound (the caller computes the bounds at
    confidence ``1 - (1 - c)/m``); the first of equals."""
    if not tests:
        raise InvalidInputError("a gate over tests needs at least one test. Found none.")
    statistics = [gate_statistic(rule, t.estimate, t.bound, t.leak) for t in tests]
    best = max(range(len(tests)), key=lambda index: statistics[index].value)
    return replace(statistics[best], test=tests[best].name, n_tests=len(tests))
