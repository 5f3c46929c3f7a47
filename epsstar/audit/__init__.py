"""The audit pipeline: tables, loader discovery, streaming a model over data, ``audit()``.

The package itself is callable: ``epsstar.audit(model, train, population, label="label")``
audits a fitted model on DataFrames in one call and returns a result that shows itself in a
notebook and writes the JSON and HTML report (:func:`epsstar.api.audit_objects`, where the
call is documented).

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
import sys
import types
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "audit": "epsstar.audit.run",
    "ModelFile": "epsstar.audit.model.loading",
    "ModelObject": "epsstar.audit.model.loading",
    "Tables": "epsstar.audit.data.reading",
    "AttackSettings": "epsstar.audit.attacks.scoring",
    "audit_losses": "epsstar.audit.attacks.from_losses",
    "AuditOptions": "epsstar.audit.options",
    "AuditResult": "epsstar.audit.output.result",
}

__all__ = [
    "AttackSettings",
    "AuditOptions",
    "AuditResult",
    "ModelFile",
    "ModelObject",
    "Tables",
    "audit",
    "audit_losses",
]

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.attacks.from_losses import audit_losses
    from epsstar.audit.attacks.scoring import AttackSettings
    from epsstar.audit.data.reading import Tables
    from epsstar.audit.model.loading import ModelFile, ModelObject
    from epsstar.audit.options import AuditOptions
    from epsstar.audit.output.result import AuditResult
    from epsstar.audit.run import audit


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'epsstar.audit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


class _CallableAudit(types.ModuleType):
    """This package, callable: ``epsstar.audit(model, train, population, label=...)``.

    Why a callable module: ``epsstar.audit`` is the package users import records from
    (``from epsstar.audit import Tables``), and the name a notebook calls. A function of the
    same name in ``epsstar/__init__.py`` would be replaced by this package as soon as any
    ``epsstar.audit.*`` module is imported (the import system sets the attribute), so only
    the package itself can answer the call in every import order. The class of the module
    object changes (a documented mechanism of the import system); its names, lazy exports
    and submodules stay as they are.

    The call is forwarded by name to :mod:`epsstar.api`, the layer above the reports that
    composes the pipeline with them (its result renders the HTML report); the pipeline's
    rooms never import it. The forwarding is resolved when called, as this package's other
    names are (``_EXPORTS``), so ``import epsstar.audit`` stays as light as before.
    """

    def __call__(self, model: Any, train: Any, population: Any, /, **options: Any) -> Any:
        api = importlib.import_module("epsstar.api")
        return api.audit_objects(model, train, population, **options)


sys.modules[__name__].__class__ = _CallableAudit
