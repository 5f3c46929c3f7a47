"""The command line: argument parsing, formatting and exit codes; the only layer that prints.

``main`` parses ``epsstar COMMAND ...`` and runs the subcommand's handler; each
subcommand lives in a module of this package that exposes ``register(subparsers)``.
"""

from epsstar.cli.main import main

__all__ = ["main"]
