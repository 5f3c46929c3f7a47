"""``epsstar.audit_training(trainer, train, population, label=..., **options)``: the audit of
a training procedure that is a Python function, from a notebook.

``trainer(train_frame) -> fitted model`` (or ``trainer(train_frame, seed=...)``) is the
procedure under audit, in place of ``epsstar audit-training --command``: the same canaries,
runs, bounds, guess rules and result
(:class:`~epsstar.audit.training_audit.procedure.CallableProcedure`). ``train`` and
``population`` are DataFrames (pandas or polars), Arrow tables or CSV/Parquet files; the
options are the fields of :class:`~epsstar.audit.training_audit.audit.TrainingAuditSetup`
(``canaries``, ``runs``, ``claimed_epsilon``, ``threat_models``, ``guesses``, ``seed``...)
and ``loader``/``outputs`` for the models the trainer returns.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from epsstar.api.result import NotebookTrainingResult
from epsstar.audit.data.files import FileDigest
from epsstar.audit.data.in_memory import StagedTables, TableObject, is_path
from epsstar.audit.training_audit.audit import TrainingAuditSetup, audit_training
from epsstar.audit.training_audit.procedure import CallableProcedure
from epsstar.exceptions import InvalidInputError

__all__ = ["audit_training_objects"]

_ROLES = ("train", "population")
#: What the caller gives positionally, or as ``label``: never an option.
_GIVEN = frozenset({"train", "population", "label_column", "trainer", "table_names"})


def _options(record: Any) -> frozenset[str]:
    return frozenset(field.name for field in dataclasses.fields(record)) - _GIVEN


def _staged(
    tables: dict[str, str | os.PathLike[str] | TableObject], label: str
) -> tuple[dict[str, Path], StagedTables]:
    """Each table as a file: a path as it is, a frame staged as Parquet (the format the
    procedure is handed; the trainer receives a DataFrame, so no ``(X, y)`` arrays)."""
    staged = StagedTables()
    paths: dict[str, Path] = {}
    for role, value in tables.items():
        if is_path(value):
            paths[role] = Path(value)
        else:
            paths[role] = staged.stage(value, role, label, arrays=False)
    return paths, staged


def audit_training_objects(
    trainer: Callable[..., Any],
    train: str | os.PathLike[str] | TableObject,
    population: str | os.PathLike[str] | TableObject,
    *,
    label: str,
    **options: Any,
) -> NotebookTrainingResult:
    """Audit the training procedure ``trainer`` (see the module) with the canaries drawn from
    ``population`` added to ``train``, whose labels are in the column ``label``. Returns a
    :class:`~epsstar.api.result.NotebookTrainingResult`."""
    if not callable(trainer):
        raise InvalidInputError(
            f"the trainer must be a function taking the training DataFrame and returning a "
            f"fitted model. Found a {type(trainer).__module__}.{type(trainer).__qualname__}."
        )
    setup_names, procedure_names = _options(TrainingAuditSetup), _options(CallableProcedure)
    unknown = sorted(set(options) - setup_names - procedure_names)
    if unknown:
        known = ", ".join(sorted(setup_names | procedure_names))
        raise InvalidInputError(
            f"epsstar.audit_training takes the options {known}. Found {unknown[0]!r}."
        )
    paths, staged = _staged({"train": train, "population": population}, label)
    settings = {k: v for k, v in options.items() if k in setup_names}
    loading = {k: v for k, v in options.items() if k in procedure_names - setup_names}
    names = (staged.name("train") or "--train", staged.name("population") or "--population")
    setup = TrainingAuditSetup(
        paths["train"], paths["population"], label, table_names=names, **settings
    )
    procedure = CallableProcedure(trainer, label, setup.features, **loading)
    try:
        result = audit_training(procedure, setup)
    except InvalidInputError as error:
        raise type(error)(staged.named(str(error))) from None
    named = tuple(
        FileDigest(staged.name(role) or digest.path, digest.sha256)
        for role, digest in zip(_ROLES, result.data, strict=True)
    )
    return NotebookTrainingResult(dataclasses.replace(result, data=named))
