"""The ``epsstar`` command line.

Each subcommand lives in its own module that exposes ``register(subparsers)``;
that function adds its parser and sets ``handler`` (``args -> exit code``).
Modules are imported only when the parser is built, and heavy libraries
(scipy, scikit-learn, torch) only inside handlers, so ``epsstar --help``
starts fast. Every :class:`~epsstar.exceptions.EpsstarError` becomes a
one-line message on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from collections.abc import Callable, Sequence

from epsstar import __version__
from epsstar.cli.exit_codes import EXIT_INTERRUPTED, EXIT_USAGE
from epsstar.exceptions import EpsstarError, EpsstarWarning

#: Modules that contribute subcommands, in the order ``--help`` lists them.
SUBCOMMAND_MODULES: tuple[str, ...] = (
    "epsstar.cli.audit",
    "epsstar.cli.audit_many",
    "epsstar.cli.landscape",
    "epsstar.cli.epsilon",
    "epsstar.cli.demo",
    "epsstar.cli.simulate",
    "epsstar.cli.train",
    "epsstar.cli.sweep",
)

Handler = Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    """argparse with exit code 2 and a one-line message for usage errors."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="epsstar",
        description="Audit the privacy of a trained model instance: Epsilon*, an empirical "
        "lower bound on its (epsilon, delta).",
    )
    parser.add_argument("--version", action="version", version=f"epsstar {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    subparsers.required = True
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: object = None,
    line: str | None = None,
) -> None:
    print(f"epsstar: warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(words)
    args.command_line = ["epsstar", *words]
    handler: Handler = args.handler
    with warnings.catch_warnings():
        warnings.simplefilter("always", EpsstarWarning)
        warnings.showwarning = _show_warning
        try:
            return handler(args)
        except EpsstarError as error:
            print(f"epsstar {args.command}: error: {error}", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt:
            print("epsstar: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
