"""``epsstar audit-many``: audit the models of a manifest, summarised per strategy."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from epsstar.cli.common.options import OUTPUT_FILES, add_engine_options, engine_option
from epsstar.cli.common.text_table import aligned_table
from epsstar.cli.exit_codes import EXIT_GATE_FAILED, EXIT_OK, EXIT_PARTIAL, EXIT_PREMISE_FAILED

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.many import FleetDocument, ManifestEntry, ModelAudit, StrategySummary
    from epsstar.cli.common.pipeline import GatedRun
    from epsstar.cli.common.writers import RunFiles
    from epsstar.plumbing.files.staging import StagedFolder

SUMMARY = "audit many models from a CSV or TOML manifest, with per-strategy summaries"


def register(subparsers: Any) -> None:
    from epsstar.cli.commands.audit import add_model_options
    from epsstar.cli.common.pipeline import add_pipeline_options
    from epsstar.cli.common.premise_options import add_accept_premise_option

    parser = subparsers.add_parser(
        "audit-many",
        help=SUMMARY,
        description=SUMMARY + ". Relative paths in the manifest are read from the "
        "manifest's folder, not the current one. " + OUTPUT_FILES + " Exit code: 0 all "
        "audited and within the gate, 1 some Epsilon* above its limit (--max-epsilon or "
        "--config; 0 with --warn-only), 2 usage or input error (nothing audited or written), "
        "3 some model could not be audited (the others' results are still written), 4 with a "
        "limit, some model's premise fails (its train and population differ without the model; "
        "--accept-premise-failure reads the gate anyway; 0 with --warn-only).",
    )
    parser.add_argument(
        "manifest",
        metavar="MANIFEST",
        help="manifest file (.csv or .toml); relative paths in it are relative to its folder",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="parallel processes, or local Dask workers with --engine dask and no "
        "--scheduler (default: 2 or the number of CPUs if fewer)",
    )
    add_engine_options(parser, "model")
    parser.add_argument(
        "--json",
        metavar="OUT",
        default=None,
        help="write every result and the summaries as JSON to OUT",
    )
    parser.add_argument(
        "--reports",
        metavar="DIR",
        default=None,
        help="write each audited model's HTML report to DIR (named strategy-repeat.html)",
    )
    add_model_options(parser)
    add_accept_premise_option(parser)
    add_pipeline_options(parser)
    parser.set_defaults(handler=run)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _table(summaries: list[StrategySummary]) -> str:
    header = ["strategy", "audited", "failed", "min eps*", "mean eps*", "max eps*", "mechanism"]
    rows = [header]
    for s in summaries:
        rows.append(
            [
                s.strategy,
                str(s.n_models - s.n_failed),
                str(s.n_failed),
                _number(s.epsilon_min),
                _number(s.epsilon_mean),
                _number(s.epsilon_max),
                _number(s.mechanism_epsilon),
            ]
        )
    return aligned_table(rows, left_columns=1)


def progress_line(done: int, total: int, record: ModelAudit) -> str:
    """``[3/10] strategy #repeat: Epsilon* = x`` (or the error) for a finished model."""
    if record.error is not None:
        status = f"error: {record.error}"
    else:
        status = f"Epsilon* = {record.epsilon_star:.4f}"
    where = "" if record.worker is None else f" (worker {record.worker})"
    return f"[{done}/{total}] {record.entry.strategy} #{record.entry.repeat}: {status}{where}"


def _document(
    args: argparse.Namespace, records: list[ModelAudit], summaries: list[StrategySummary]
) -> FleetDocument:
    """The ``--json`` document; report paths relative to it, so that the two can move together."""
    from epsstar.audit.many import FleetDocument

    folder = Path(args.json).resolve().parent
    models = [
        replace(r, report=Path(os.path.relpath(r.report.resolve(), folder))) if r.report else r
        for r in records
    ]
    return FleetDocument(
        manifest=str(args.manifest),
        max_epsilon=args.max_epsilon,
        gate=args.gate,
        engine=engine_option(args, args.jobs),
        strategies=tuple(summaries),
        models=tuple(models),
    )


def _premise_failed(args: argparse.Namespace, records: list[ModelAudit]) -> list[ModelAudit]:
    """The audited models whose premise fails under the gate, as ``epsstar audit`` reads one
    (none without --max-epsilon or with --accept-premise-failure)."""
    from epsstar.cli.common.premise_options import premise_blocks_gate

    return [
        r
        for r in records
        if r.result is not None and premise_blocks_gate(r.result, args.accept_premise_failure)
    ]


def _inputs(args: argparse.Namespace, entries: list[ManifestEntry]) -> list[tuple[str, Path]]:
    """The run's input files, which no output may replace: the manifest and what it lists."""
    inputs = [("MANIFEST", Path(args.manifest))]
    for entry in entries:
        where = f"{entry.strategy!r} #{entry.repeat}"
        inputs += [
            (f"the model of {where}", entry.model),
            (f"the training data of {where}", entry.train),
            (f"the population data of {where}", entry.population),
        ]
    return inputs


def _stage_reports(files: RunFiles, folder: str, entries: list[ManifestEntry]) -> StagedFolder:
    """The ``--reports`` folder, with the name of each model's report checked up front."""
    from epsstar.audit.many import _report_name  # the name audit_many gives a model's report
    from epsstar.exceptions import InputFileError

    names: dict[str, ManifestEntry] = {}
    for entry in entries:
        name = _report_name(entry)
        if name in names:
            first = names[name]
            raise InputFileError(
                f"--reports: models {first.strategy!r} #{first.repeat} and {entry.strategy!r} "
                f"#{entry.repeat} would write the same report. Found {name!r} twice."
            )
        names[name] = entry
    return files.folder("--reports", folder, list(names))


def _print_summary(args: argparse.Namespace, records: list[ModelAudit], gated: GatedRun) -> None:
    """The table and the totals; each failure once (on its progress line, or here if --quiet)."""
    from epsstar.audit.many import above_gate, summarise
    from epsstar.audit.side_by_side import count_of

    print(_table(summarise(records)))
    failed = [r for r in records if r.failed]
    if args.quiet:
        for record in failed:
            print(f"FAILED {record.entry.model}: {record.error}", file=sys.stderr)
    audited = len(records) - len(failed)
    noun = "model" if len(records) == 1 else "models"
    print(f"{len(records)} {noun}: {audited} audited, {len(failed)} failed")
    if gated.limits_source is not None:
        failing = sum(1 for model in gated.models if model.failed)
        print(
            f"{failing} of {audited} audited models above their limits ({gated.limits_source}: "
            f"{count_of(len(gated.checks), 'check')})"
        )
    elif args.max_epsilon is not None:
        above = len(above_gate(records))
        print(
            f"{above} of {audited} audited models above the limit {args.max_epsilon:g} "
            f"(gate: {args.gate})"
        )
    premise_failing = _premise_failed(args, records)
    if premise_failing:
        names = ", ".join(f"{r.entry.strategy} #{r.entry.repeat}" for r in premise_failing)
        print(
            f"{len(premise_failing)} of {audited} audited models fail the premise (train and "
            f"population differ without the model: {names}): exit 4 unless "
            "--accept-premise-failure"
        )
    if gated.warn_only and gated.failed:
        print("warn-only: the gate failed; the exit code is 0")
    if args.json:
        print(f"JSON written to {args.json}")
    if args.junit_xml:
        print(f"JUnit XML written to {args.junit_xml}")
    if args.reports:
        n_reports = sum(1 for r in records if r.report is not None)
        print(f"{n_reports} report{'' if n_reports == 1 else 's'} written to {args.reports}")


def run(args: argparse.Namespace) -> int:
    from epsstar.audit.many import above_gate, audit_many, read_manifest, summarise
    from epsstar.cli.commands.audit import fleet_settings
    from epsstar.cli.common import pipeline
    from epsstar.cli.common.many_gate import gated_models, limited_settings
    from epsstar.cli.common.text_options import refuse_text_models
    from epsstar.cli.common.writers import JSON, JUNIT, STEP_SUMMARY, RunFiles, report_writer

    entries = read_manifest(args.manifest)
    refuse_text_models(entries)
    limits = pipeline.limits_option(args)  # a bad limits file is refused before any audit
    settings = limited_settings(fleet_settings(args), entries, limits, args.manifest)
    engine = engine_option(args, args.jobs)
    done = [0]

    def report(record: ModelAudit) -> None:
        done[0] += 1
        if not args.quiet:
            print(progress_line(done[0], len(entries), record), file=sys.stderr, flush=True)

    summary_path = pipeline.step_summary_path()
    with RunFiles(_inputs(args, entries)) as files:
        json_file = files.plan("--json", args.json, JSON)
        junit_file = files.plan("--junit-xml", args.junit_xml, JUNIT)
        summary_file = files.plan(f"${pipeline.STEP_SUMMARY_VARIABLE}", summary_path, STEP_SUMMARY)
        reports = None if args.reports is None else _stage_reports(files, args.reports, entries)
        records = audit_many(
            entries,
            settings,
            jobs=args.jobs,
            on_done=report,
            report_dir=None if reports is None else reports.staging,
            write_report=report_writer,
            engine=engine,
        )
        audited = [record.result for record in records if record.result is not None]
        files.add_inputs(pair for result in audited for pair in result.files_read)
        if reports is not None:  # where each report will be once the outputs are committed
            records = [
                replace(r, report=reports.path(r.report.name)) if r.report else r for r in records
            ]
        if json_file is not None:
            files.write(json_file, _document(args, records, summarise(records)).to_dict())
        gated = gated_models(records, limits, args.manifest)
        files.write(junit_file, gated)
        if summary_path is not None:
            section = pipeline.step_summary_markdown(gated)
            previous = pipeline.read_step_summary(summary_path)
            files.write(summary_file, pipeline.StepSummary(previous, section))
        files.commit()
    _print_summary(args, records, gated)
    pipeline.annotate(gated)
    if any(r.failed for r in records):
        return EXIT_PARTIAL
    if _premise_failed(args, records) and not gated.warn_only:
        return EXIT_PREMISE_FAILED
    # limits from a file: its checks decide; else each audit's own gate (the same verdict)
    failed = gated.failed if limits.source is not None else bool(above_gate(records))
    return EXIT_GATE_FAILED if failed and not gated.warn_only else EXIT_OK
