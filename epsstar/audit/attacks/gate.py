"""The release gate of an audit that ran several membership tests (attacks).

A release gate must fail a model that any of the tests shows to leak past the limit, so
with m attacks the gate's statistic is the largest of theirs
(:func:`epsstar.statistics.bounds.gate.gate_over_tests`). Each attack's leak test is then read at
level ``(1 - c)/m`` and each lower bound is recomputed at confidence ``1 - (1 - c)/m``
(Bonferroni), so that a model without a leak fails the gate no more often than with the
loss attack alone. The attacks' own records keep their figures at confidence ``c``.

An uninformative attack (every record scores the same) is no test: it cannot fail the gate
whatever the model, so m counts only the informative attacks, and it does not lower the
others' per-test level.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from epsstar.audit.options import AuditOptions
from epsstar.audit.output.attack_result import AttackResult
from epsstar.audit.output.result import AuditResult
from epsstar.statistics.bounds.from_counts import bonferroni_confidence
from epsstar.statistics.bounds.gate import TestedStatistic, gate_over_tests, gate_statistic
from epsstar.statistics.bounds.held_out_bound import split_lower_bound

__all__ = ["gated_over_attacks"]


def gated_over_attacks(
    result: AuditResult, attacks: Sequence[AttackResult], options: AuditOptions
) -> AuditResult:
    """``result`` with its gate over every informative attack of ``attacks`` (unchanged for
    one)."""
    attacks = [attack for attack in attacks if attack.informative]
    gates = [attack.gate for attack in attacks if attack.gate is not None]
    if len(attacks) < 2 or len(gates) < len(attacks):
        return result
    each = bonferroni_confidence(options.confidence, len(attacks))
    tests = [
        TestedStatistic(
            name=attack.name,
            estimate=attack.epsilon.epsilon,
            leak=gate.leak,
            bound=split_lower_bound(
                attack.member_scores,
                attack.nonmember_scores,
                delta=attack.epsilon.delta,
                confidence=each,
                seed=options.seed,
            ),
        )
        for attack, gate in zip(attacks, gates, strict=True)
    ]
    # each attack's statistic at the gate's per-test level, for limits per attack
    each_gate = tuple(
        dataclasses.replace(
            gate_statistic(options.gate, test.estimate, test.bound, test.leak),
            test=test.name,
            n_tests=len(tests),
        )
        for test in tests
    )
    return dataclasses.replace(
        result, gate=gate_over_tests(options.gate, tests), attack_gates=each_gate
    )
