"""The results of audits called from Python: what a notebook shows, and the files they write.

:class:`NotebookResult` holds the :class:`~epsstar.audit.output.result.AuditResult` of a
model's audit, :class:`NotebookTrainingResult` the
:class:`~epsstar.audit.training_audit.result.TrainingAuditResult` of a training procedure's.
Each reads every value it shows from its JSON document (``to_dict()``), so the notebook and
the JSON cannot disagree. ``write_json`` and ``write_html`` write the files the command line
writes with ``--json`` and ``--report``, each atomically (a temporary, then a rename: a failed
write leaves no file behind).
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from epsstar.audit.output.result import AuditResult
from epsstar.audit.output.xml_text import xml_text
from epsstar.audit.training_audit.result import TrainingAuditResult
from epsstar.plumbing.files.staging import atomic_write_json
from epsstar.plumbing.records.json_types import JsonObject

__all__ = ["NotebookResult", "NotebookTrainingResult"]


def _table(rows: list[tuple[str, str]], warnings: tuple[str, ...]) -> str:
    """``rows`` as an HTML table, then the warnings; every text escaped."""
    cells = "".join(
        f"<tr><th style='text-align:left'>{html.escape(what)}</th>"
        f"<td style='text-align:left'>{html.escape(xml_text(value))}</td></tr>"
        for what, value in rows
    )
    listed = "".join(f"<li>{html.escape(xml_text(line))}</li>" for line in warnings)
    listed = f"<p>Warnings:</p><ul>{listed}</ul>" if listed else ""
    return f"<div class='epsstar-audit'><table>{cells}</table>{listed}</div>"


def _number(value: object) -> str:
    return f"{value:.4f}" if isinstance(value, float) else "—"


def _gate(document: JsonObject) -> str:
    limit = document["max_epsilon"]
    if limit is None:
        return "no gate (pass max_epsilon= to set one)"
    verdict = "PASS" if document["passed"] else "FAIL"
    return f"{verdict} (limit {limit:g})"


def _premise(document: JsonObject) -> str:
    holds = document["premise_holds"]
    if holds is None:
        baseline = document["blind_baseline"]
        skipped = baseline.get("skipped") if isinstance(baseline, dict) else None
        return f"not checked ({skipped})" if skipped else "not checked"
    if holds:
        return "holds: the records alone do not tell the tables apart"
    return "fails: the records alone tell the tables apart (docs/premise.md)"


class _Shown:
    """What both notebook results share: the full ``result``, whose attributes are read
    through this object too; a text and an HTML form of their summary rows; and the JSON
    their command writes."""

    __slots__ = ()
    result: AuditResult | TrainingAuditResult

    def __getattr__(self, name: str) -> Any:
        if name == "result":  # not set yet (a copy being built): no attribute to forward
            raise AttributeError(name)
        return getattr(self.result, name)

    def rows(self) -> list[tuple[str, str]]:
        raise NotImplementedError

    def to_dict(self) -> JsonObject:
        """The JSON document the command's ``--json`` writes."""
        return self.result.to_dict()

    def __repr__(self) -> str:
        return "\n".join(f"{what}: {value}" for what, value in self.rows())

    def _repr_html_(self) -> str:
        """The compact summary as an HTML table, for Jupyter."""
        return _table(self.rows(), self.result.warnings)

    def write_json(self, path: str | os.PathLike[str]) -> Path:
        """Write the JSON document of the command's ``--json`` to ``path`` at once."""
        atomic_write_json(path, self.to_dict())
        return Path(path)


@dataclass(frozen=True, slots=True, repr=False)
class NotebookResult(_Shown):
    """An audit's result as a notebook holds it; ``result`` is the full
    :class:`~epsstar.audit.output.result.AuditResult`, whose attributes are read through
    this object too (``epsilon_star``, ``lower_bound``, ``provenance``...)."""

    result: AuditResult

    def rows(self) -> list[tuple[str, str]]:
        """The compact summary, as ``(what, value)`` rows of text."""
        document = self.to_dict()
        provenance = document["provenance"]
        assert isinstance(provenance, dict)
        confidence = self.result.lower_bound.confidence
        return [
            ("Epsilon*", f"{_number(document['epsilon_star'])} (delta {document['delta']:.3g})"),
            (
                "lower bound",
                f"{_number(document['epsilon_lower_bound'])} at {confidence:.0%} confidence",
            ),
            ("gate", _gate(document)),
            ("premise", _premise(document)),
            ("model", str(provenance["model"])),
            ("data", f"{provenance['train']} ({document['n_train']:,} rows), "
             f"{provenance['population']} ({document['n_population']:,} rows)"),
        ]  # fmt: skip

    def write_html(self, path: str | os.PathLike[str]) -> Path:
        """Write the HTML report of ``epsstar audit --report`` to ``path`` at once."""
        from epsstar.reports import render

        return render(self.result, Path(path))


@dataclass(frozen=True, slots=True, repr=False)
class NotebookTrainingResult(_Shown):
    """A training procedure's audit as a notebook holds it; ``result`` is the full
    :class:`~epsstar.audit.training_audit.result.TrainingAuditResult`, whose attributes are
    read through this object too (``refuted``, ``epsilon_lower_bound``, ``threat_models``...)."""

    result: TrainingAuditResult

    def rows(self) -> list[tuple[str, str]]:
        """The compact summary, as ``(what, value)`` rows of text."""
        document = self.to_dict()
        runs = document["runs"]
        design = f"{document['design']}: {document['canaries']} canaries, {runs} run"
        return [
            ("verdict", str(document["verdict"])),
            ("lower bound", f"{_number(document['epsilon_lower_bound'])} ({document['method']}, "
             f"at {document['confidence']:.0%} confidence)"),
            ("claim", f"epsilon {document['claimed_epsilon']:g} ({document['claimed_from']}), "
             f"delta {document['delta']:.3g} ({document['delta_from']})"),
            ("design", design + ("s" if runs != 1 else "")),
        ]  # fmt: skip

    def write_html(self, path: str | os.PathLike[str]) -> Path:
        """Write the HTML report of ``epsstar audit-training --report`` to ``path`` at once."""
        from epsstar.reports.training_audit import render_training_audit

        return render_training_audit(self.result, Path(path))
