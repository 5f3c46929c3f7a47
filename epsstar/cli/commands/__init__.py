"""One module per subcommand, each with ``register(subparsers)`` and a handler.

May import: :mod:`epsstar.cli.common` and every layer below the command line.
"""
