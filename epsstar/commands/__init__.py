"""Subcommands of the ``epsstar`` CLI, one module each (see :mod:`epsstar.cli`)."""
