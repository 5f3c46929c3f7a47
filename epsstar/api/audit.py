"""``epsstar.audit(model, train, population, label=..., **options)``: one call, objects in.

The keyword options are the fields of the records the pipeline reads, by their own names:
:class:`~epsstar.audit.data.reading.Tables` (``features``, ``batch_size``, ``loss``...),
:class:`~epsstar.audit.attacks.from_losses.AuditOptions` (``max_epsilon``, ``seed``,
``method``...), how the model is loaded (``loader``, ``outputs``, ``classes``, ``trust``:
:class:`~epsstar.audit.model.loading.ModelObject`, or for a file
:class:`~epsstar.audit.model.loading.ModelFile` with ``device`` too) and the keywords of
:func:`epsstar.audit.run.audit` (``attack``, ``slice_by``, ``premise``, ``progress``). Each
name is read from those records, so a new option of theirs is an option here at once; a
name none of them has is refused, listing the names there are.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from collections.abc import Mapping
from typing import Any

from epsstar.api.result import NotebookResult
from epsstar.audit.data.in_memory import TableObject
from epsstar.audit.data.reading import Tables
from epsstar.audit.model.loading import ModelFile, ModelObject
from epsstar.audit.options import AuditOptions
from epsstar.audit.run import audit
from epsstar.exceptions import InvalidInputError

__all__ = ["audit_objects"]

#: What the caller gives positionally, or as ``label``: never an option.
_GIVEN = frozenset({"train", "population", "label_column", "staged", "path", "model"})


def _names(record: Any) -> frozenset[str]:
    return frozenset(field.name for field in dataclasses.fields(record) if field.init) - _GIVEN


def _run_names() -> frozenset[str]:
    parameters = inspect.signature(audit).parameters.values()
    return frozenset(p.name for p in parameters if p.kind is p.KEYWORD_ONLY)


def _split(options: Mapping[str, Any], model_record: Any) -> list[dict[str, Any]]:
    """``options`` split by record: Tables, AuditOptions, the model's, the run's."""
    groups = (_names(Tables), _names(AuditOptions), _names(model_record), _run_names())
    known = frozenset().union(*groups)
    unknown = sorted(set(options) - known)
    if unknown:
        raise InvalidInputError(
            f"epsstar.audit takes the options {', '.join(sorted(known))}. Found {unknown[0]!r}."
        )
    return [{k: v for k, v in options.items() if k in group} for group in groups]


def audit_objects(
    model: object,
    train: str | os.PathLike[str] | TableObject,
    population: str | os.PathLike[str] | TableObject,
    *,
    label: str,
    **options: Any,
) -> NotebookResult:
    """Audit ``model`` (a fitted model in memory, or a model file) against its training
    data ``train`` and the population data ``population`` (DataFrames, Arrow tables,
    ``(X, y)`` arrays or files), whose labels are in the column ``label`` (for ``(X, y)``
    arrays: the name the labels are given). ``options`` are described in the module
    docstring. Returns a :class:`NotebookResult`."""
    loaded: ModelFile | ModelObject
    if isinstance(model, (str, os.PathLike)):
        tables, settings, loading, run = _split(options, ModelFile)
        loaded = ModelFile.of(model, **loading)
    else:
        tables, settings, loading, run = _split(options, ModelObject)
        loaded = ModelObject(model, **loading)
    result = audit(
        loaded,
        Tables(train, population, label, **tables),
        AuditOptions(**settings),
        **run,
    )
    return NotebookResult(result)
