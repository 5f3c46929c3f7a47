"""The attacks of one audit: stream the reference models, score, and add the records.

:func:`with_attacks` is the step :func:`epsstar.audit.run.audit` takes once the loss
attack is audited: it reads the target's and each reference model's log-odds of the true
label (:mod:`epsstar.audit.attacks.references`), audits every attack asked for
(:mod:`epsstar.audit.attacks.scoring`) and returns the result with their records, the headline
being the loss attack's unless only other attacks were asked for, and the release gate
over every attack (:mod:`epsstar.audit.attacks.gate`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from epsstar.audit.attacks.from_losses import AuditOptions
from epsstar.audit.attacks.gate import gated_over_attacks
from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.audit.attacks.references import TableReading, log_odds_of, reference_confidences
from epsstar.audit.attacks.scoring import AttackSettings, attack_results, headline_from
from epsstar.audit.data.tables import LabelMap
from epsstar.audit.engines.streaming import Progress
from epsstar.audit.model.plugins import LoadedModel
from epsstar.audit.output.result import AuditResult
from epsstar.statistics._validation import FloatArray

__all__ = ["with_attacks"]


def with_attacks(
    base: AuditResult,
    settings: AttackSettings,
    *,
    target: LoadedModel,
    target_path: Path,
    reading: TableReading,
    label_map: LabelMap,
    options: AuditOptions,
    logit_losses: tuple[FloatArray, FloatArray] | None = None,
    trust: bool = False,
    progress: Progress | None = None,
    inputs: AttackInputs | None = None,
) -> AuditResult:
    """``base`` (the loss attack's audit) with one record per attack of ``settings``.

    ``logit_losses`` are the target's logit losses on both tables when the audit measured
    them already (otherwise the target is streamed again); the reference model files
    (``settings.reference_models``) are loaded only when an attack needs them, and not at
    all when ``inputs`` holds their log-odds already (an audit on a Dask cluster).
    """
    needs = any(name != "loss" for name in settings.attacks)
    target_log_odds = references = None
    if needs and inputs is not None:
        target_log_odds, references = inputs.target, inputs.references
    elif needs:
        if logit_losses is not None:
            target_log_odds = (-logit_losses[0], -logit_losses[1])
        else:
            target_log_odds = log_odds_of(target, target_path, reading, label_map)
        references = reference_confidences(
            settings.reference_models, reading, label_map, trust=trust, progress=progress
        )
    results = attack_results(settings, base, target_log_odds, references, options)
    result = gated_over_attacks(headline_from(base, results), results, options)
    if references is None:
        return result
    provenance = {**result.provenance, "reference_models": list(references.models)}
    return dataclasses.replace(result, provenance=provenance)
