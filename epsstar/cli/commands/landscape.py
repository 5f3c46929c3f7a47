"""``epsstar landscape``: the privacy–utility landscape of audited models as one HTML file."""

from __future__ import annotations

import argparse
from typing import Any

from epsstar.cli.common.options import OUTPUT_FILES, describe_choices
from epsstar.cli.exit_codes import EXIT_OK
from epsstar.statistics.names import UTILITIES

SUMMARY = "draw the privacy-utility landscape of audit results as a self-contained HTML file"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "landscape",
        help=SUMMARY,
        description=SUMMARY + ". RESULTS are JSON files of 'epsstar audit-many --json' and/or "
        "'epsstar audit --json' (a single audit's strategy is its file name); every record "
        "needs a strategy and an epsilon_star and utility.population values, or an error. "
        f"{OUTPUT_FILES} Exit code: 0 written, 2 usage or input error.",
    )
    parser.add_argument("results", nargs="+", metavar="RESULTS", help="results JSON files")
    parser.add_argument(
        "--out", required=True, metavar="OUT.html", help="where to write the landscape"
    )
    parser.add_argument(
        "--utility",
        choices=UTILITIES.names,
        default=UTILITIES.names[0],
        help=f"utility on the population data for the vertical axis: {describe_choices(UTILITIES)}",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from epsstar.audit.output.landscape_data import landscape, read_results
    from epsstar.cli.common.writers import LANDSCAPE, RunFiles

    with RunFiles(("RESULTS", path) for path in args.results) as files:
        page = files.plan("--out", args.out, LANDSCAPE)
        data = landscape(read_results(args.results, utility=args.utility), utility=args.utility)
        files.write(page, data)
        files.commit()
    noun = "model" if data.n_models == 1 else "models"
    print(f"landscape of {data.n_models} {noun} written to {args.out}")
    return EXIT_OK
