"""The audit pipeline: tables, loader discovery, streaming a model over data, ``audit()``.

``audit(model, Tables(train, population, label_column), AuditOptions(...))`` loads a
model (a path, or a :class:`ModelFile` saying how to load it) through its loader plugin,
streams both tables through it, and turns the per-record losses into a frozen
:class:`AuditResult`; ``audit_losses(train_losses, population_losses, ...)`` is its
statistics step alone, for losses computed elsewhere; ``audit_many`` audits every model
of a manifest.
The names load lazily, so that reading a table does not import the statistics.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "audit": "epsstar.audit.run",
    "ModelFile": "epsstar.audit.model.loading",
    "Tables": "epsstar.audit.data.reading",
    "AttackSettings": "epsstar.audit.attacks.scoring",
    "audit_losses": "epsstar.audit.attacks.from_losses",
    "AuditOptions": "epsstar.audit.attacks.from_losses",
    "AuditResult": "epsstar.audit.output.result",
}

__all__ = [
    "AttackSettings",
    "AuditOptions",
    "AuditResult",
    "ModelFile",
    "Tables",
    "audit",
    "audit_losses",
]

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.attacks.from_losses import AuditOptions, audit_losses
    from epsstar.audit.attacks.scoring import AttackSettings
    from epsstar.audit.data.reading import Tables
    from epsstar.audit.model.loading import ModelFile
    from epsstar.audit.output.result import AuditResult
    from epsstar.audit.run import audit


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'epsstar.audit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
