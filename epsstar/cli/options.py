"""Options and output shared by several subcommands."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_family_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--family",
        choices=("normal", "gmm"),
        default="normal",
        help="distribution fitted to the transformed losses (default: normal)",
    )


def add_estimator_options(parser: argparse.ArgumentParser) -> None:
    """``--method``, ``--interval`` and ``--n-bootstrap`` (the headline estimator)."""
    from epsstar.statistics.estimator import DEFAULT_METHOD, METHODS

    parser.add_argument(
        "--method",
        choices=METHODS,
        default=DEFAULT_METHOD,
        help=f"estimator of Epsilon* (default: {DEFAULT_METHOD}). parametric: fitted CDFs (the "
        "Epsilon* paper's); empirical: empirical CDFs; tails: empirical body with "
        "generalised-Pareto tails; tails-crossfit: the same fits, test chosen and scored on "
        "different halves of the data (docs/accuracy.md measures each one)",
    )
    parser.add_argument(
        "--interval",
        type=float,
        default=None,
        metavar="LEVEL",
        help="add a bootstrap interval at this level, e.g. 0.95 (sampling spread; see "
        "docs/accuracy.md for its measured coverage)",
    )
    parser.add_argument(
        "--n-bootstrap",
        type=int,
        default=200,
        metavar="B",
        help="bootstrap resamples for --interval (default 200)",
    )


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        metavar="OUT",
        default=None,
        help="write the result as JSON to OUT ('-' for standard output)",
    )


def emit(result: dict[str, Any], json_path: str | None, summary: str) -> None:
    """JSON to standard output for ``-``; else the summary, and the JSON written atomically."""
    from epsstar.audit.files import atomic_write_json

    if json_path == "-":
        json.dump(result, sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
        return
    if json_path:
        atomic_write_json(json_path, result)
    print(summary)
    if json_path:
        print(f"  JSON written to {json_path}")
