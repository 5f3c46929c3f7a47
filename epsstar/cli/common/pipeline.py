"""What a release gate tells a CI pipeline: JUnit XML, a GitHub job summary, workflow
annotations, and the exit code (docs/ci.md).

Pipelines read test reports, not standard error. One :class:`GatedRun` holds the checks of
every model a command audited (:mod:`epsstar.audit.output.gate_checks`) and renders them:

* ``--junit-xml PATH``: one ``<testcase>`` per model, attack and slice the gate checks; a
  failure's message names the statistic and carries it, the limit and the report's path; a
  model that could not be audited is an ``<error>``; a slice too small to estimate is
  ``<skipped>``; a model audited without any limit is one passing ``measure`` case; every
  case of an audited model carries its figures (:class:`ModelFigures`) as properties and in
  ``<system-out>`` (the JUnit XML schema of Jenkins' and GitLab's readers: ``testsuites`` →
  ``testsuite`` → ``testcase`` with ``properties``, ``failure``/``error``/``skipped`` and
  ``system-out`` children);
* when ``GITHUB_STEP_SUMMARY`` names a file, markdown appended to it: the verdict, a table
  of every audited model's figures, gated or not, and a table of the checks;
* under ``GITHUB_ACTIONS=true``, one ``::error`` line per failed check (``::warning`` with
  ``--warn-only``) and one ``::warning`` per warning about the inputs, in GitHub's
  workflow-command syntax with its escapes (``%``, CR, LF; and ``:``, ``,`` in properties),
  on standard error when standard output carries the JSON (``--json -``);
* ``--warn-only``: all of the above, and exit 0 when only the gate failed.

Every text of these outputs passes through :func:`~epsstar.audit.output.xml_text.xml_text`
(a file name, a slice value or a strategy may hold characters XML forbids).

The limits come from ``--max-epsilon`` and the reviewed file (``--config``, else
``epsstar.toml`` or ``pyproject.toml``'s ``[tool.epsstar]`` in the working folder;
:mod:`epsstar.audit.data.configs.limits`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from xml.etree import ElementTree

from epsstar.audit.output.xml_text import xml_text

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.data.configs.limits import Limits
    from epsstar.audit.output.gate_checks import GateCheck, ModelFigures

__all__ = [
    "GatedModel",
    "GatedRun",
    "StepSummary",
    "add_junit_option",
    "add_pipeline_options",
    "annotation_lines",
    "junit_text",
    "limits_option",
    "step_summary_markdown",
    "step_summary_path",
]

#: The environment variable GitHub Actions sets to the job summary's file.
STEP_SUMMARY_VARIABLE = "GITHUB_STEP_SUMMARY"


def add_pipeline_options(parser: argparse.ArgumentParser) -> None:
    """``--config``, ``--junit-xml`` and ``--warn-only``."""
    parser.add_argument(
        "--config",
        metavar="PATH",
        default=None,
        help="the reviewed file of limits: [tool.epsstar] of a pyproject.toml, or an "
        "epsstar.toml (default: epsstar.toml, else pyproject.toml, in the working folder, "
        "if either holds limits; docs/ci.md)",
    )
    add_junit_option(parser)
    parser.add_argument(
        "--warn-only",
        action="store_true",
        default=None,
        help="report and annotate a failed gate, but exit 0 (to roll a gate out)",
    )


def add_junit_option(parser: argparse.ArgumentParser) -> None:
    """``--junit-xml``."""
    parser.add_argument(
        "--junit-xml",
        metavar="PATH",
        default=None,
        help="write the gate's checks as JUnit XML: one test case per model, attack and "
        "slice checked (a passing 'measure' case per model without a limit), each with the "
        "model's Epsilon*, lower bound and premise, and one errored case per model that "
        "could not be audited",
    )


def limits_option(args: argparse.Namespace) -> Limits:
    """The limits of ``--config`` (or the file found), with ``--max-epsilon`` as default."""
    from epsstar.audit.data.configs.limits import Limits, find_limits, read_limits

    if args.config is not None:
        found = read_limits(args.config)
        if found is None:
            from epsstar.exceptions import InputFileError

            raise InputFileError(
                f"--config: a pyproject.toml must hold a [tool.epsstar] table of limits. "
                f"Found none in {args.config!r}."
            )
    else:
        found = find_limits()
    limits = (found or Limits()).with_default(args.max_epsilon)
    if args.warn_only:
        limits = Limits(limits.default, limits.entries, True, limits.source)
    return limits


@dataclass(frozen=True, slots=True)
class GatedModel:
    """One model's checks, the warnings about its inputs, its report and how its columns
    were matched; ``error`` when it could not be audited (``audit-many``); ``figures``
    what its audit measured (``None``: not audited)."""

    model: str
    checks: tuple[GateCheck, ...] = ()
    warnings: tuple[str, ...] = ()
    report: str | None = None
    columns_from: str | None = None
    error: str | None = None
    figures: ModelFigures | None = None

    @property
    def failed(self) -> bool:
        return any(not check.passed for check in self.checks)


@dataclass(frozen=True, slots=True)
class GatedRun:
    """Every model a command audited, and whether a failed gate only warns."""

    models: tuple[GatedModel, ...]
    warn_only: bool = False
    limits_source: str | None = None
    command: str = "audit"

    @property
    def checks(self) -> tuple[GateCheck, ...]:
        return tuple(check for model in self.models for check in model.checks)

    @property
    def gated(self) -> bool:
        return bool(self.checks)

    @property
    def failed(self) -> bool:
        return any(model.failed for model in self.models)


# --------------------------------------------------------------------------- JUnit XML


def _failure_text(check: GateCheck, model: GatedModel) -> str:
    lines = [check.explanation()]
    if model.report is not None:
        lines.append(f"report: {model.report}")
    lines += [f"warning: {line}" for line in model.warnings]
    return "\n".join(lines)


#: The name of the passing case of a model audited without any limit.
MEASURE_CASE = "measure"


def _figure_properties(figures: ModelFigures | None) -> list[tuple[str, str]]:
    if figures is None:
        return []
    return [
        ("epsilon_star", f"{figures.epsilon_star:.4f}"),
        ("delta", f"{figures.delta:g}"),
        ("lower_bound", f"{figures.lower_bound:.4f}"),
        ("lower_bound_confidence", f"{figures.confidence:g}"),
        ("premise", figures.premise),
    ]


def _model_case(
    suite: ElementTree.Element, model: GatedModel, name: str, properties: list[tuple[str, str]]
) -> ElementTree.Element:
    """A ``<testcase>`` of ``model`` with its properties and figures."""
    case = ElementTree.SubElement(suite, "testcase", classname=f"epsstar.{model.model}", name=name)
    listed = ElementTree.SubElement(case, "properties")
    for key, value in [*properties, *_figure_properties(model.figures)]:
        ElementTree.SubElement(listed, "property", name=key, value=value)
    return case


def _system_out(case: ElementTree.Element, model: GatedModel) -> None:
    if model.figures is not None:
        ElementTree.SubElement(case, "system-out").text = model.figures.line()


def _case(suite: ElementTree.Element, check: GateCheck, model: GatedModel) -> None:
    statistic = "none" if check.statistic is None else f"{check.statistic:.4f}"
    properties = [
        ("statistic", statistic),
        ("statistic_name", check.statistic_name),
        ("limit", f"{check.limit:g}"),
        ("rule", check.rule),
        ("report", model.report or ""),
    ]
    case = _model_case(suite, model, check.name, properties)
    if check.skipped:
        ElementTree.SubElement(case, "skipped", message=f"{check.name}: too few records")
    elif not check.passed:
        message = f"{check.statistic_name} {statistic} above the limit {check.limit:g}"
        if check.blocked:
            message = (
                f"the inputs drew a warning that can hide a leak ({statistic}, "
                f"limit {check.limit:g})"
            )
        if model.report is not None:
            message += f"; report: {model.report}"
        kind = "Extraction" if check.extraction else "EpsilonStar"
        failure = ElementTree.SubElement(case, "failure", message=message, type=kind)
        failure.text = _failure_text(check, model)
    _system_out(case, model)


def junit_text(run: GatedRun) -> str:
    """The JUnit XML document of ``run`` (module docstring)."""
    suites = ElementTree.Element("testsuites", name="epsstar")
    suite = ElementTree.SubElement(suites, "testsuite", name=f"epsstar {run.command} gate")
    for model in run.models:
        if model.error is not None:
            case = ElementTree.SubElement(
                suite, "testcase", classname=f"epsstar.{model.model}", name="audit"
            )
            error = ElementTree.SubElement(case, "error", message=model.error, type="AuditError")
            error.text = model.error
            continue
        for check in model.checks:
            _case(suite, check, model)
        if not model.checks:  # no limit applies: the figures pass as measured
            case = _model_case(suite, model, MEASURE_CASE, [("report", model.report or "")])
            _system_out(case, model)
    cases = suite.findall("testcase")
    counts = {
        "tests": len(cases),
        "failures": sum(case.find("failure") is not None for case in cases),
        "errors": sum(case.find("error") is not None for case in cases),
        "skipped": sum(case.find("skipped") is not None for case in cases),
    }
    for element in (suites, suite):
        for key, value in counts.items():
            element.set(key, str(value))
    for element in suites.iter():  # names, slices and messages come from the inputs
        for name, text in element.attrib.items():
            element.set(name, xml_text(text))
        if element.text:
            element.text = xml_text(element.text)
    ElementTree.indent(suites)
    body = ElementTree.tostring(suites, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"


# --------------------------------------------------------------------------- step summary


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def step_summary_markdown(run: GatedRun) -> str:
    """A markdown section for GitHub's job summary: the verdict, a table of the checks, the
    models that could not be audited and the warnings about the inputs."""
    if not run.gated and not any(model.error for model in run.models):
        verdict = "NO GATE (no limit: the figures are measured, not checked)"
    elif run.failed or any(model.error for model in run.models):
        verdict = "FAIL (warn-only: the job goes on)" if run.warn_only else "FAIL"
    else:
        verdict = "PASS"
    lines = [f"### epsstar release gate: {verdict}", ""]
    if run.limits_source is not None:
        lines += [f"Limits from `{run.limits_source}`.", ""]
    lines += _figures_table(run)
    if run.checks:
        lines += [
            "| model | check | statistic | value | limit | verdict | report |",
            "|---|---|---|---|---|---|---|",
        ]
        for model in run.models:
            for check in model.checks:
                value = "–" if check.statistic is None else f"{check.statistic:.4f}"
                lines.append(
                    f"| {_cell(model.model)} | {_cell(check.name)} | {check.statistic_name} | "
                    f"{value} | {check.limit:g} | {check.verdict} | {_cell(model.report or '')} |"
                )
        lines.append("")
    for model in run.models:
        if model.columns_from == "position":
            lines.append(f"- {_cell(model.model)}: columns matched by position")
        if model.error is not None:
            lines.append(f"- {_cell(model.model)}: could not be audited: {_cell(model.error)}")
        lines += [f"- {_cell(model.model)}: warning: {_cell(line)}" for line in model.warnings]
    return xml_text("\n".join(lines).rstrip() + "\n\n")


def _figures_table(run: GatedRun) -> list[str]:
    """A row per audited model: Epsilon*, the lower bound and the premise's verdict; the
    bound's confidence in the header when every model shares it, else in each cell."""
    measured = [(model, model.figures) for model in run.models if model.figures is not None]
    if not measured:
        return []
    confidences = {figures.confidence for _, figures in measured}
    shared = measured[0][1].lower_bound_name if len(confidences) == 1 else "lower bound"
    lines = [
        f"| model | Epsilon* | δ | {shared} | premise (blind baseline) |",
        "|---|---|---|---|---|",
    ]
    for model, figures in measured:
        bound = f"{figures.lower_bound:.4f}"
        if len(confidences) > 1:
            bound += f" at {figures.confidence:.0%}"
        lines.append(
            f"| {_cell(model.model)} | {figures.epsilon_star:.4f} | {figures.delta_text} | "
            f"{bound} | {figures.premise} |"
        )
    return [*lines, ""]


@dataclass(frozen=True, slots=True)
class StepSummary:
    """The job summary's file as it will be: what it held, then this run's section."""

    previous: str
    section: str

    @property
    def text(self) -> str:
        return (
            self.previous
            + ("" if not self.previous or self.previous.endswith("\n") else "\n")
            + self.section
        )


def step_summary_path(environ: Mapping[str, str] | None = None) -> str | None:
    """The job summary's file, when ``GITHUB_STEP_SUMMARY`` names one."""
    value = (os.environ if environ is None else environ).get(STEP_SUMMARY_VARIABLE, "")
    return value or None


def read_step_summary(path: str) -> str:
    """What the job summary's file holds so far ('' when it does not exist yet)."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as error:
        from epsstar.exceptions import InputFileError

        raise InputFileError(
            f"${STEP_SUMMARY_VARIABLE} must name a readable UTF-8 file, which the summary is "
            f"appended to. Found {path!r} ({type(error).__name__})."
        ) from None


# --------------------------------------------------------------------------- annotations


def _escape_data(text: str) -> str:
    return xml_text(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(kind: str, file: str, title: str, message: str) -> str:
    return (
        f"::{kind} file={_escape_property(file)},title={_escape_property(title)}::"
        f"{_escape_data(message)}"
    )


def annotation_lines(run: GatedRun) -> list[str]:
    """GitHub workflow commands for the failed checks and the warnings (module docstring)."""
    failed = "warning" if run.warn_only else "error"
    lines: list[str] = []
    for model in run.models:
        if model.error is not None:
            lines.append(_command("error", model.model, "epsstar: not audited", model.error))
        for check in model.checks:
            if not check.passed:
                message = check.explanation()
                if model.report is not None:
                    message += f"; report: {model.report}"
                lines.append(_command(failed, model.model, "epsstar release gate", message))
        for warning in model.warnings:
            lines.append(_command("warning", model.model, "epsstar: inputs", warning))
    return lines


def annotate(
    run: GatedRun, environ: Mapping[str, str] | None = None, *, json_on_stdout: bool = False
) -> None:
    """Print the annotations under ``GITHUB_ACTIONS=true``: on standard output, or on
    standard error when standard output carries the JSON (``--json -``), which they would
    corrupt (GitHub reads workflow commands from both streams)."""
    if (os.environ if environ is None else environ).get("GITHUB_ACTIONS") != "true":
        return
    stream = sys.stderr if json_on_stdout else sys.stdout
    for line in annotation_lines(run):
        print(line, file=stream)
