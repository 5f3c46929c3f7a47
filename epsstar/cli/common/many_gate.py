"""The release gate of ``epsstar audit-many`` as a pipeline reads it: JUnit XML and the
GitHub job summary (:mod:`.pipeline` renders them, as for ``epsstar audit``).

Each audited model is named by its strategy and repeat (``logreg-0``, the name of its
report), which the manifest makes unique; its checks are one per attack (and slice) against
``--max-epsilon`` (:mod:`epsstar.audit.output.gate_checks`). A model that could not be
audited is one errored test case carrying the error, so that a pipeline shows it as broken
rather than passed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from epsstar.cli.common.pipeline import GatedModel, GatedRun

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.many import ModelAudit

__all__ = ["gated_models", "model_name"]


def model_name(record: ModelAudit) -> str:
    """``strategy-repeat``: unique in a manifest, and the name of the model's report."""
    return f"{record.entry.strategy}-{record.entry.repeat}"


def gated_models(records: Sequence[ModelAudit], max_epsilon: float | None) -> GatedRun:
    """Every model's checks against ``max_epsilon`` (none without it), its warnings, its
    report, and the error of a model that could not be audited."""
    from epsstar.audit.data.configs.limits import Limits
    from epsstar.audit.output.gate_checks import gate_checks

    limits = Limits().with_default(max_epsilon)
    models = []
    for record in records:
        name, result = model_name(record), record.result
        provenance = None if result is None else result.provenance
        models.append(
            GatedModel(
                name,
                () if result is None else gate_checks(result, limits, name),
                record.warnings if result is None else result.warnings,
                None if record.report is None else str(record.report),
                None if provenance is None else provenance.columns.source,
                record.error,
            )
        )
    return GatedRun(tuple(models), command="audit-many")
