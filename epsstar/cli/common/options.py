"""Options and output shared by several subcommands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from epsstar.statistics.names import DEFAULT_METHOD, ENGINES, FAMILIES, METHODS, Names

if TYPE_CHECKING:  # the estimator modules load scipy: imported when a command runs
    from epsstar.audit.engines.dask_engine import Engine
    from epsstar.plumbing.records.json_types import JsonObject
    from epsstar.statistics.estimators.methods import Bootstrap, EstimatorConfig

#: How every command treats its output files (its --help says so).
OUTPUT_FILES = (
    "Output files are checked before the work starts (missing folders are made; no output "
    "may replace an input) and written together once it has finished: all of them or none."
)
#: The largest seed: every consumer of a seed takes it (scikit-learn's stops at 2**32 - 1).
MAX_SEED = 2**32 - 1


def describe_choices(names: Names[Any]) -> str:
    """``name: summary`` of each choice, for help text (``%`` doubled: argparse formats help
    strings with ``%``)."""
    return "; ".join(f"{name}: {entry.summary}" for name, entry in names.items()).replace("%", "%%")


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
    from epsstar.statistics.estimators.methods import method_config

    return method_config(
        args.method,
        family=args.family,
        search=getattr(args, "search", "refine"),
        rate_window=getattr(args, "rate_window", None),
    )


def bootstrap_option(args: argparse.Namespace) -> Bootstrap | None:
    """The bootstrap interval ``--interval`` and ``--n-bootstrap`` ask for, if any."""
    from epsstar.statistics.estimators.methods import Bootstrap

    return None if args.interval is None else Bootstrap(args.interval, args.n_bootstrap)


def seed(text: str) -> int:
    """A ``--seed`` value, checked when the arguments are parsed: an integer in [0, 2**32 - 1]."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(
            f"must be an integer from 0 to {MAX_SEED}. Found {text!r}."
        )
    return value


def column_names(text: str) -> tuple[str, ...]:
    """Comma-separated column names (``--features``, ``--class-labels``), each stripped of
    spaces, checked when the arguments are parsed: at least one, each once."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise argparse.ArgumentTypeError(f"expected comma-separated names. Found {text!r}")
    repeated = [name for name in names if names.count(name) > 1]
    if repeated:
        raise argparse.ArgumentTypeError(f"expected each name once. Found {repeated[0]!r} twice")
    return names


def add_features_option(parser: argparse.ArgumentParser, default: str) -> None:
    """``--features``, the one parser of every command's feature columns: a tuple of names,
    or ``None`` for ``default`` (what the command takes without the option)."""
    parser.add_argument(
        "--features",
        type=column_names,
        default=None,
        metavar="A,B,...",
        help=f"the feature columns, in the order the model takes them (default: {default})",
    )


def add_seed_option(parser: argparse.ArgumentParser, purpose: str) -> None:
    parser.add_argument("--seed", type=seed, default=0, metavar="S", help=f"{purpose} (default 0)")


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        metavar="OUT",
        default=None,
        help="write the result as JSON to OUT ('-' for standard output)",
    )


def json_path(given: str | None) -> str | None:
    """The ``--json`` file to write: ``None`` without one, or for standard output (``-``)."""
    return None if given is None or given == "-" else given


def emit(
    result: JsonObject,
    json_path: str | None,
    summary: str,
    *,
    files: Sequence[tuple[str, str]] = (),
    verdict: Sequence[str] = (),
) -> None:
    """What a command prints once its files are in place.

    With ``--json -`` the JSON goes to standard output, alone; the ``verdict`` lines (what
    a reader of the summary must not miss, such as a gate that failed under ``--warn-only``)
    and the lines naming the other ``files`` (``(what, path)``) go to standard error.
    Otherwise the summary is printed with the ``verdict`` lines, then a line per file written.
    """
    if json_path == "-":
        from epsstar.plumbing.files.staging import json_text

        sys.stdout.write(json_text(result))
        for line in verdict:
            print(line.strip(), file=sys.stderr)
        for what, path in files:
            print(f"  {what} written to {path}", file=sys.stderr)
        return
    print(summary + "".join(f"\n{line}" for line in verdict))
    written = [("JSON", json_path)] if json_path else []
    for what, path in [*written, *files]:
        print(f"  {what} written to {path}")


def add_engine_options(parser: argparse.ArgumentParser, unit: str) -> None:
    """``--engine`` and ``--scheduler``: where the work runs (docs/scale.md)."""
    parser.add_argument(
        "--engine",
        choices=ENGINES.names,
        default=ENGINES.names[0],
        help=f"where the work runs (a unit of work: one {unit}): {describe_choices(ENGINES)}",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="--engine dask: the Dask scheduler's address, e.g. tcp://10.0.0.5:8786 "
        "(default: a local cluster started for the run)",
    )


def engine_option(args: argparse.Namespace, workers: int = 2, option: str = "--jobs") -> Engine:
    """The engine ``--engine`` and ``--scheduler`` ask for (``workers`` for a local cluster,
    the value of ``option``)."""
    from epsstar.audit.engines.dask_engine import Engine
    from epsstar.exceptions import InvalidInputError

    if isinstance(workers, int) and workers < 1:
        raise InvalidInputError(f"{option} must be an integer ≥ 1. Found {workers}.")
    return Engine(args.engine, args.scheduler, workers)
