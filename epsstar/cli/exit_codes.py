"""Exit codes of the ``epsstar`` command, one meaning each (listed in the README)."""

from typing import Final

#: Success; for a release gate, every Epsilon* within the limit.
EXIT_OK: Final = 0
#: The release gate failed: an Epsilon* above ``--max-epsilon``.
EXIT_GATE_FAILED: Final = 1
#: Bad usage or bad input; nothing was audited or written.
EXIT_USAGE: Final = 2
#: Some models could not be audited; the others were, and their results are written.
EXIT_PARTIAL: Final = 3
#: A release gate that cannot be read: the blind baseline finds that the training and
#: population data differ without the model, so Epsilon* measures that difference too
#: (``--accept-premise-failure`` reads the gate anyway).
EXIT_PREMISE_FAILED: Final = 4
#: Interrupted (Ctrl-C): 128 + SIGINT.
EXIT_INTERRUPTED: Final = 130
#: Standard output was closed before everything was printed (``epsstar ... | head``):
#: 128 + SIGPIPE, the status a shell shows for a program that a closed pipe stops. The
#: output files are in place when the summary is printed, so they are complete.
EXIT_BROKEN_PIPE: Final = 141

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_GATE_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PARTIAL",
    "EXIT_PREMISE_FAILED",
    "EXIT_USAGE",
]
