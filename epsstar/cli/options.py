"""Options and output shared by several subcommands."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from epsstar.statistics.names import DEFAULT_METHOD, FAMILIES, METHODS, Names

if TYPE_CHECKING:  # the estimator modules load scipy: imported when a command runs
    from epsstar.statistics.methods import Bootstrap, EstimatorConfig


def describe_choices(names: Names[Any]) -> str:
    """``name: summary`` of each choice, for help text."""
    return "; ".join(f"{name}: {entry.summary}" for name, entry in names.items())


def add_family_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--family",
        choices=FAMILIES.names,
        default="normal",
        help="--method parametric: distribution fitted to the transformed losses. "
        f"{describe_choices(FAMILIES)} (default: normal)",
    )


def add_estimator_options(parser: argparse.ArgumentParser) -> None:
    """``--method``, ``--interval`` and ``--n-bootstrap`` (the headline estimator)."""
    parser.add_argument(
        "--method",
        choices=METHODS.names,
        default=DEFAULT_METHOD,
        help=f"estimator of Epsilon* (default: {DEFAULT_METHOD}). {describe_choices(METHODS)} "
        "(docs/accuracy.md measures each one)",
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


def estimator_config(args: argparse.Namespace) -> EstimatorConfig:
    """The configuration of ``--method`` with the options that apply to it.

    ``--search`` and ``--rate-window`` are read where the command declares them; an
    option given for a method it does not apply to is refused.
    """
    from epsstar.statistics.methods import method_config

    return method_config(
        args.method,
        family=args.family,
        search=getattr(args, "search", "refine"),
        rate_window=getattr(args, "rate_window", None),
    )


def bootstrap_option(args: argparse.Namespace) -> Bootstrap | None:
    """The bootstrap interval ``--interval`` and ``--n-bootstrap`` ask for, if any."""
    from epsstar.statistics.methods import Bootstrap

    return None if args.interval is None else Bootstrap(args.interval, args.n_bootstrap)


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
