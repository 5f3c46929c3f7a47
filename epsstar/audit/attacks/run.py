"""The attacks of one audit: score each one and add the records.

:func:`with_attacks` is the step :func:`epsstar.audit.run.audit` takes once the loss
attack is audited: given the target's and each reference model's log-odds of the true
label (read by an engine, :mod:`epsstar.audit.engines.references`), it audits every attack asked for
(:mod:`epsstar.audit.attacks.scoring`) and returns the result with their records, the headline
being the loss attack's unless only other attacks were asked for, and the release gate
over every attack (:mod:`epsstar.audit.attacks.gate`).
"""

from __future__ import annotations

import dataclasses

from epsstar.audit.attacks.gate import gated_over_attacks
from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.audit.attacks.scoring import AttackSettings, attack_results, headline_from
from epsstar.audit.options import AuditOptions
from epsstar.audit.output.result import AuditResult

__all__ = ["with_attacks"]


def with_attacks(
    base: AuditResult,
    settings: AttackSettings,
    inputs: AttackInputs | None,
    options: AuditOptions,
) -> AuditResult:
    """``base`` (the loss attack's audit) with one record per attack of ``settings``.

    ``inputs`` are the target's and the reference models' log-odds on both tables, which
    every attack but the loss attack needs (``None`` when only the loss attack runs).
    """
    results = attack_results(settings, base, inputs, options)
    result = gated_over_attacks(headline_from(base, results), results, options)
    if inputs is None:
        return result
    references = inputs.references
    if result.provenance is None or references is None:
        return result
    provenance = dataclasses.replace(result.provenance, reference_models=references.models)
    return dataclasses.replace(result, provenance=provenance)
