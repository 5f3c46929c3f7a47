"""What several subcommands share: options, progress bars, plain-text tables.

May import: every layer below the command line; not :mod:`epsstar.cli.commands`.
"""
