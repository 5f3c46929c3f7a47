"""Every file a command writes goes through here: its format's writer, staged with the run's
other outputs and renamed into place together (:mod:`epsstar.plumbing.files.staging`).

A format is a name, what it holds, and the function that writes one whole file of it at a
path (a temporary, until the commit). :data:`FORMATS` lists them; a new output format (a
JUnit file, say) is one writer function and one line there, and the command that offers it
plans the file with :meth:`RunFiles.plan` before its work and writes it with
:meth:`RunFiles.write` after. The temporaries are written with the atomicity of
:class:`~epsstar.plumbing.files.staging.Outputs`: all of a run's files appear, or none.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Final, Generic, TypeVar

from epsstar.plumbing.files.staging import Outputs, StagedFile, StagedFolder

if TYPE_CHECKING:
    from epsstar.audit.output.landscape_data import Landscape
    from epsstar.audit.output.result import AuditResult
    from epsstar.audit.training_audit.result import TrainingAuditResult
    from epsstar.cli.common.pipeline import GatedRun, StepSummary
    from epsstar.plumbing.records.json_types import JsonObject

__all__ = [
    "FORMATS",
    "JSON",
    "JUNIT",
    "LANDSCAPE",
    "REPORT",
    "STEP_SUMMARY",
    "TRAINING_AUDIT_REPORT",
    "Format",
    "RunFiles",
    "report_writer",
    "write_file",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Format(Generic[T]):
    """One kind of output file: its name, what it holds, and its writer."""

    name: str
    holds: str
    write: Callable[[T, Path], None]


def _json(document: JsonObject, path: Path) -> None:
    from epsstar.plumbing.files.staging import json_text

    path.write_bytes(json_text(document).encode("utf-8"))


def _report(result: AuditResult, path: Path) -> None:
    from epsstar.reports import render

    render(result, path)


def _training_audit(result: TrainingAuditResult, path: Path) -> None:
    from epsstar.reports.training_audit import render_training_audit

    render_training_audit(result, path)


def _landscape(landscape: Landscape, path: Path) -> None:
    from epsstar.reports import render_landscape

    render_landscape(landscape, path)


def _junit(run: GatedRun, path: Path) -> None:
    from epsstar.cli.common.pipeline import junit_text

    path.write_bytes(junit_text(run).encode("utf-8"))


def _step_summary(summary: StepSummary, path: Path) -> None:
    path.write_bytes(summary.text.encode("utf-8"))


JSON: Final[Format[JsonObject]] = Format("json", "a JSON document, indented, no NaN", _json)
REPORT: Final[Format[AuditResult]] = Format(
    "report", "the self-contained HTML report of one audit", _report
)
LANDSCAPE: Final[Format[Landscape]] = Format(
    "landscape", "the privacy–utility landscape of many audits as HTML", _landscape
)

JUNIT: Final[Format[GatedRun]] = Format(
    "junit", "JUnit XML: a test case per model, attack and slice the gate checks", _junit
)
TRAINING_AUDIT_REPORT: Final[Format[TrainingAuditResult]] = Format(
    "training-audit-report",
    "the self-contained HTML report of an audit of a training procedure",
    _training_audit,
)
STEP_SUMMARY: Final[Format[StepSummary]] = Format(
    "step-summary", "GitHub's job summary: what it held, then the gate's markdown", _step_summary
)

#: Every format a command can write, by name (a read-only view).
FORMATS: Final[
    Mapping[
        str,
        Format[JsonObject]
        | Format[AuditResult]
        | Format[Landscape]
        | Format[GatedRun]
        | Format[StepSummary]
        | Format[TrainingAuditResult],
    ]
] = MappingProxyType(
    {f.name: f for f in (JSON, REPORT, LANDSCAPE, JUNIT, STEP_SUMMARY, TRAINING_AUDIT_REPORT)}
)


@dataclass(frozen=True, slots=True)
class Planned(Generic[T]):
    """A file of the run: where it goes (staged) and its format."""

    staged: StagedFile
    format: Format[T]


class RunFiles:
    """The files of one run (see the module docstring); ``inputs`` are ``(option, path)``
    pairs no output may replace. Use it as a context manager: leaving the block without
    :meth:`commit` leaves no file behind."""

    def __init__(self, inputs: Iterable[tuple[str, str | os.PathLike[str]]] = ()) -> None:
        self.outputs = Outputs(inputs)

    def __enter__(self) -> RunFiles:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.outputs.__exit__(kind, error, trace)

    def plan(
        self, option: str, path: str | os.PathLike[str] | None, format: Format[T]
    ) -> Planned[T] | None:
        """The file ``option`` names at ``path`` (``None``: not asked for), checked now."""
        if path is None:
            return None
        return Planned(self.outputs.file(option, path), format)

    def folder(
        self, option: str, path: str | os.PathLike[str], names: Sequence[str]
    ) -> StagedFolder:
        """The folder ``option`` names, to hold the files ``names`` (each written by a
        format's writer into :attr:`StagedFolder.staging`), checked now."""
        return self.outputs.folder(option, path, names)

    def add_inputs(self, inputs: Iterable[tuple[str, str | os.PathLike[str]]]) -> None:
        """Files the run read that no output may replace, known once the work is done."""
        self.outputs.add_inputs(inputs)

    def write(self, planned: Planned[T] | None, value: T) -> None:
        """Write ``value`` to the planned file's temporary with its format's writer."""
        if planned is not None:
            planned.staged.write_with(lambda path: planned.format.write(value, path))

    def commit(self) -> None:
        """Rename every written file into place, all of them or none."""
        self.outputs.commit()


def report_writer(result: AuditResult, path: Path) -> Path:
    """:data:`REPORT`'s writer as the report writers of ``audit-many`` are called: the path
    written is returned."""
    REPORT.write(result, path)
    return path


def write_file(
    format: Format[T],
    value: T,
    path: str | os.PathLike[str],
    *,
    option: str = "output",
    inputs: Iterable[tuple[str, str | os.PathLike[str]]] = (),
) -> None:
    """One file written at once, through the same seam: staged, written, renamed."""
    with RunFiles(inputs) as files:
        files.write(files.plan(option, path, format), value)
        files.commit()
