"""``epsstar audit-many``: audit the models of a manifest, summarised per strategy."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from epsstar.cli.exit_codes import EXIT_GATE_FAILED, EXIT_OK, EXIT_USAGE
from epsstar.cli.text_table import aligned_table

SUMMARY = "audit many models from a CSV or TOML manifest, with per-strategy summaries"


def register(subparsers: Any) -> None:
    from epsstar.cli.audit import add_model_options

    parser = subparsers.add_parser(
        "audit-many",
        help=SUMMARY,
        description=SUMMARY + ". Exit code: 0 all audited and "
        "within the gate, 1 some Epsilon* above --max-epsilon, 2 some model could not be "
        "audited (the others' results are still written) or a usage error.",
    )
    parser.add_argument("manifest", metavar="MANIFEST", help="manifest file (.csv or .toml)")
    parser.add_argument(
        "--jobs",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="parallel processes (default: 2 or the number of CPUs if fewer)",
    )
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
    parser.set_defaults(handler=run)


def _table(summaries: list[dict[str, Any]]) -> str:
    header = ["strategy", "models", "failed", "min eps*", "mean eps*", "max eps*", "mechanism"]
    rows = [header]

    def number(value: float | None) -> str:
        return "-" if value is None else f"{value:.4f}"

    for s in summaries:
        rows.append(
            [
                s["strategy"],
                str(s["n_models"]),
                str(s["n_failed"]),
                number(s["epsilon_star_min"]),
                number(s["epsilon_star_mean"]),
                number(s["epsilon_star_max"]),
                number(s["mechanism_epsilon"]),
            ]
        )
    return aligned_table(rows, left_columns=1)


def run(args: argparse.Namespace) -> int:
    from epsstar.audit.files import atomic_write_json
    from epsstar.audit.many import audit_many, read_manifest, summarise
    from epsstar.cli.audit import model_options
    from epsstar.reports import render

    entries = read_manifest(args.manifest)
    done = [0]

    def report(record: dict[str, Any]) -> None:
        done[0] += 1
        entry = record["entry"]
        if not args.quiet:
            status = (
                f"error: {record['error']}"
                if record.get("error")
                else f"Epsilon* = {record['result']['epsilon_star']:.4f}"
            )
            print(
                f"[{done[0]}/{len(entries)}] {entry['strategy']} #{entry['repeat']}: {status}",
                file=sys.stderr,
                flush=True,
            )

    records = audit_many(
        entries,
        jobs=args.jobs,
        on_done=report,
        report_dir=Path(args.reports) if args.reports else None,
        write_report=render,
        **model_options(args),
    )
    if args.json:
        # Report paths relative to the JSON file, so that the two can move together.
        folder = Path(args.json).resolve().parent
        for record in records:
            if record.get("report"):
                record["report"] = os.path.relpath(Path(record["report"]).resolve(), folder)
    summaries = [s.to_dict() for s in summarise(records)]
    failed = [r for r in records if r.get("error")]
    above = [r for r in records if r.get("result") and r["result"]["passed"] is False]
    payload = {
        "manifest": str(args.manifest),
        "max_epsilon": args.max_epsilon,
        "n_models": len(records),
        "n_failed": len(failed),
        "n_above_gate": len(above),
        "strategies": summaries,
        "models": records,
    }
    if args.json:
        atomic_write_json(args.json, payload)
    print(_table(summaries))
    for record in failed:
        entry = record["entry"]
        print(f"FAILED {entry['model']}: {record['error']}", file=sys.stderr)
    if args.max_epsilon is not None:
        print(f"{len(above)} of {len(records)} models above the limit {args.max_epsilon:g}")
    if args.json:
        print(f"JSON written to {args.json}")
    if failed:
        return EXIT_USAGE
    return EXIT_GATE_FAILED if above else EXIT_OK
