"""What a release gate compares with its limit, for each rule of ``--gate``.

- ``"estimate"``: the Epsilon* estimate itself.
- ``"lower-bound"``: the held-out Clopper–Pearson bound
  (:func:`epsstar.statistics.bounds.held_out_bound.split_lower_bound`). The bound lies
  below the true ratio of eq. 7 (``epsilon-star-negoescu-2024.md``) at the test it
  counts, hence below the model's true Epsilon*, except with probability at most
  ``1 - confidence``: a gate on it fails a model whose true Epsilon* is within
  the limit no more often than that, for any losses.
- ``"significant"``: the estimate, counted only when the held-out exact leak test
  (:mod:`epsstar.statistics.bounds.leak_test`) rejects "no leak" at the level
  ``1 - confidence``; else 0. When both loss sets come from one distribution the
  test rejects with probability at most that level, so the gate fails at most that
  often, whatever the shape of the losses.

Several membership tests (attacks) on one model: the gate compares the largest of their
statistics with the limit (:func:`gate_over_tests`), each test's leak test at level
``(1 - confidence)/m`` and each lower bound at confidence ``1 - (1 - confidence)/m`` for
m tests (Bonferroni), so that the gate fails a model without a leak no more often than
with one test.

The three rules' false-alarm rates and power are measured by
``benchmarks/release_gate.py`` (``docs/release-gate.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import check_confidence
from epsstar.statistics.bounds.from_counts import EpsilonLowerBound
from epsstar.statistics.bounds.leak_test import LeakTest
from epsstar.statistics.json_types import JsonObject
from epsstar.statistics.names import GATES, GateRule

__all__ = ["GateStatistic", "TestedStatistic", "gate_over_tests", "gate_statistic"]


@dataclass(frozen=True, slots=True)
class GateStatistic:
    """The value a gate of ``rule`` compares with its limit, and the held-out leak test."""

    rule: GateRule
    value: float
    level: float
    leak: LeakTest
    #: With several tests, the one whose statistic is the largest, and how many there were.
    test: str | None = None
    n_tests: int = 1

    @property
    def leak_p_value(self) -> float:
        return self.leak.p_value

    @property
    def leak_found(self) -> bool:
        """The held-out exact test rejects "no leak" at ``level``."""
        return self.leak_p_value < self.level

    def to_dict(self) -> JsonObject:
        return {
            "rule": self.rule,
            "statistic": self.value,
            "leak_p_value": self.leak_p_value,
            "leak_found": self.leak_found,
            "level": self.level,
            "leak_test": self.leak.to_dict(),
            "test": self.test,
            "n_tests": self.n_tests,
        }


def gate_statistic(
    rule: GateRule, estimate: float, bound: EpsilonLowerBound, leak: LeakTest
) -> GateStatistic:
    """The statistic of ``rule`` (module doc); the leak test's level is ``1 - confidence``
    of the bound."""
    name = GATES.check(rule)
    level = round(1.0 - check_confidence(bound.confidence), 12)
    if name == "estimate":
        value = estimate
    elif name == "lower-bound":
        value = bound.epsilon
    else:
        value = estimate if leak.p_value < level else 0.0
    return GateStatistic(rule=name, value=value, level=level, leak=leak)


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
