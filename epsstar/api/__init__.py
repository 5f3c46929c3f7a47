"""The Python API for objects in memory: audit a fitted model on DataFrames from a notebook.

``epsstar.audit(model, train, population, label="label")`` (the callable package
:mod:`epsstar.audit` forwards here) takes a fitted model or a model file, and two tables
as DataFrames, Arrow tables, ``(X, y)`` arrays or files; it returns a
:class:`NotebookResult`, which shows itself in Jupyter and writes the JSON and the HTML
report the command line writes. :func:`audit_objects` is the same call under its own name.
``epsstar.audit_training(trainer, train, population, label=...)`` audits a training procedure
that is a Python function (:func:`audit_training_objects`).

This layer sits above the reports (its result renders them) and beside the command line:
it composes the audit pipeline and the reports, as the command line does for a shell.
"""

from __future__ import annotations

from epsstar.api.audit import audit_objects
from epsstar.api.result import NotebookResult, NotebookTrainingResult
from epsstar.api.training import audit_training_objects

__all__ = ["NotebookResult", "NotebookTrainingResult", "audit_objects", "audit_training_objects"]
