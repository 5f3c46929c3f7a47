"""The release gate of ``epsstar audit-many`` as a pipeline reads it: JUnit XML and the
GitHub job summary (:mod:`.pipeline` renders them, as for ``epsstar audit``).

Each audited model is named by its strategy and repeat (``logreg-0``, the name of its
report), which the manifest makes unique; its checks are one per attack (and slice) against
its limit: ``--max-epsilon``, or the reviewed limits file's entry for it (``--config``;
:mod:`epsstar.audit.data.configs.limits`), which finds a model by its path as the manifest
gives it (relative to the manifest's folder) or its file name
(:mod:`epsstar.audit.output.gate_checks`). A model that could not be
audited is one errored test case carrying the error, so that a pipeline shows it as broken
rather than passed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from epsstar.cli.common.pipeline import GatedModel, GatedRun

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.data.configs.limits import Limits
    from epsstar.audit.data.configs.manifest import ManifestEntry
    from epsstar.audit.many import FleetSettings, ModelAudit

__all__ = ["gated_models", "limited_settings", "model_key", "model_name"]


def model_name(record: ModelAudit) -> str:
    """``strategy-repeat``: unique in a manifest, and the name of the model's report."""
    return f"{record.entry.strategy}-{record.entry.repeat}"


def model_key(entry: ManifestEntry, manifest: str | os.PathLike[str]) -> str:
    """The model's path as the limits file matches it: relative to the manifest's folder
    when the model is in it (as a manifest usually gives it), else absolute."""
    folder = Path(manifest).resolve().parent
    model = Path(entry.model)
    return model.relative_to(folder).as_posix() if model.is_relative_to(folder) else str(model)


def limited_settings(
    settings: FleetSettings,
    entries: Sequence[ManifestEntry],
    limits: Limits,
    manifest: str | os.PathLike[str],
) -> FleetSettings:
    """``settings`` with each model's limit from a limits file (unchanged without one)."""
    if limits.source is None:
        return settings
    per_model = tuple(
        (f"{entry.strategy}-{entry.repeat}", limits.for_model(model_key(entry, manifest), ["loss"]))
        for entry in entries
    )
    return replace(settings, limits_by_model=per_model)


def gated_models(
    records: Sequence[ModelAudit], limits: Limits, manifest: str | os.PathLike[str]
) -> GatedRun:
    """Every model's checks against ``limits`` (none where no limit applies), its warnings,
    its report, and the error of a model that could not be audited."""
    from epsstar.audit.output.gate_checks import gate_checks, model_figures

    models = []
    for record in records:
        name, result = model_name(record), record.result
        provenance = None if result is None else result.provenance
        key = model_key(record.entry, manifest)
        checks = () if result is None else gate_checks(result, limits, key)
        models.append(
            GatedModel(
                name,
                tuple(replace(check, model=name) for check in checks),
                record.warnings if result is None else result.warnings,
                None if record.report is None else str(record.report),
                None if provenance is None else provenance.columns.source,
                record.error,
                None if result is None else model_figures(result),
            )
        )
    return GatedRun(tuple(models), limits.warn_only, limits.source, command="audit-many")
