"""The ``epsstar`` command line.

Each subcommand lives in its own module that exposes ``register(subparsers)``;
that function adds its parser and sets ``handler`` (``args -> exit code``).
Modules are imported only when the parser is built, and heavy libraries
(scipy, scikit-learn, torch) only inside handlers, so ``epsstar --help``
starts fast. Every :class:`~epsstar.exceptions.EpsstarError` becomes a
one-line message on stderr and exit code 2; Ctrl-C, "epsstar: interrupted" and
exit code 130; a closed standard output (``epsstar ... | head``), silence and exit
code 141.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TextIO

from epsstar import __version__
from epsstar.cli.common.one_line import one_line
from epsstar.cli.exit_codes import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, EXIT_USAGE
from epsstar.exceptions import EpsstarError, EpsstarWarning
from epsstar.statistics.definition import DEFINITION

#: Modules that contribute subcommands, in the order ``--help`` lists them.
SUBCOMMAND_MODULES: tuple[str, ...] = (
    "epsstar.cli.commands.audit",
    "epsstar.cli.commands.audit_many",
    "epsstar.cli.commands.audit_training",
    "epsstar.cli.commands.landscape",
    "epsstar.cli.commands.epsilon",
    "epsstar.cli.commands.demo",
    "epsstar.cli.commands.simulate",
    "epsstar.cli.commands.train",
    "epsstar.cli.commands.sweep",
    "epsstar.cli.commands.references",
)

Handler = Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    """argparse with exit code 2 and a one-line message for usage errors."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, one_line(f"{self.prog}: error: {message}") + "\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="epsstar",
        description="Audit the privacy of a trained model instance. " + DEFINITION,
    )
    parser.add_argument("--version", action="version", version=f"epsstar {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    subparsers.required = True
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    for command in subparsers.choices.values():
        command.set_defaults(option_flags=_flags(command))
    return parser


def _flags(parser: argparse.ArgumentParser) -> dict[str, str]:
    """The flag of each option of ``parser`` by the name its value is kept under
    (``batch_size``: ``--batch-size``)."""
    return {
        action.dest: max(action.option_strings, key=len)
        for action in parser._actions
        if action.option_strings and action.dest != argparse.SUPPRESS
    }


#: A message about a parameter by its Python name, as the library checks them.
_PARAMETER = re.compile(r"(?P<name>[a-z][a-z0-9_]*) (?P<rest>must |needs )")


def _named_by_flag(message: str, args: argparse.Namespace) -> str:
    """``message`` naming the flag the user typed instead of the parameter it fills: the
    library checks ``batch_size``, the user typed ``--batch-size``. Only a flag given on the
    command line is named (a value from a manifest or a configuration is not the flag's)."""
    match = _PARAMETER.match(message)
    flags: dict[str, str] = getattr(args, "option_flags", {})
    flag = flags.get(match.group("name")) if match else None
    words: list[str] = getattr(args, "command_line", [])
    if match is None or flag is None:
        return message
    if not any(word == flag or word.startswith(f"{flag}=") for word in words):
        return message
    return f"{flag} {message[match.start('rest') :]}"


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: object = None,
    line: str | None = None,
) -> None:
    print(one_line(f"epsstar: warning: {message}"), file=sys.stderr)


class _StandardOutputError(Exception):
    """Standard output refused what was printed, for another reason than a closed pipe."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.strerror or str(error))


class _GuardedOutput:
    """Standard output whose write errors are told apart from those of any other file, and
    which writes what its encoding cannot carry as backslash escapes (as standard error does)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        try:
            try:
                return self.stream.write(text)
            except UnicodeEncodeError:  # a lone surrogate (a file name that is not UTF-8)
                encoding = getattr(self.stream, "encoding", None) or "utf-8"
                return self.stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
        except BrokenPipeError:
            raise
        except OSError as error:
            raise _StandardOutputError(error) from None

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            raise
        except OSError as error:
            raise _StandardOutputError(error) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code.

    Standard output closed by its reader (``epsstar ... | head``): nothing more is
    printed, no traceback, exit code 141 (:data:`~epsstar.cli.exit_codes.EXIT_BROKEN_PIPE`).
    Standard output that fails otherwise (a full disk, ``> /dev/full``): a one-line
    message and exit code 2. Either way the output files are complete, as they are in
    place before anything is printed.
    """
    words = list(sys.argv[1:] if argv is None else argv)
    stdout = sys.stdout
    try:
        if stdout is not None:
            sys.stdout = _GuardedOutput(stdout)
        try:
            return _run(words)
        finally:  # a closed pipe often shows only when the last output is flushed
            if sys.stdout is not None:
                sys.stdout.flush()
    except BrokenPipeError:  # (on standard error, what is printed is lost anyway)
        _silence_standard_output()
        return EXIT_BROKEN_PIPE
    except _StandardOutputError as error:
        _silence_standard_output()
        print(f"epsstar: error: cannot write to standard output ({error}).", file=sys.stderr)
        return EXIT_USAGE
    finally:
        if isinstance(sys.stdout, _GuardedOutput):
            sys.stdout = stdout


def _run(words: list[str]) -> int:
    try:
        args = build_parser().parse_args(words)
        from epsstar.audit.inputs.served import without_credentials

        # recorded in the outputs: a URL's credentials stay out of them
        args.command_line = ["epsstar", *(without_credentials(word) for word in words)]
        return _handle(args)
    except KeyboardInterrupt:
        print("epsstar: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _handle(args: argparse.Namespace) -> int:
    handler: Handler = args.handler
    with warnings.catch_warnings():
        warnings.simplefilter("always", EpsstarWarning)
        warnings.showwarning = _show_warning
        try:
            return handler(args)
        except EpsstarError as error:
            message = _named_by_flag(str(error), args)
            print(one_line(f"epsstar {args.command}: error: {message}"), file=sys.stderr)
            return EXIT_USAGE


def _silence_standard_output() -> None:
    """Point standard output at the null device once it failed (a reader closed the pipe).

    Python's documentation advises this on ``BrokenPipeError``: otherwise flushing what is
    left when the interpreter exits fails again, with a traceback-like message.
    """
    with contextlib.suppress(OSError, ValueError, AttributeError):
        descriptor = sys.stdout.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, descriptor)
        os.close(null)
