"""Every exception and warning epsstar raises.

Errors about the caller's input inherit :class:`ValueError` as well, so code
that already catches ``ValueError`` keeps working; the CLI maps every
:class:`EpsstarError` to exit code 2 with its one-line message.
"""

from __future__ import annotations

__all__ = [
    "ColumnOrderWarning",
    "DegenerateDataError",
    "EpsstarError",
    "EpsstarWarning",
    "FitError",
    "InputFileError",
    "InsufficientDataError",
    "InvalidInputError",
    "OutputReadingWarning",
    "PoorFitWarning",
    "SuspectDataWarning",
    "UnseenCategoryWarning",
]


class EpsstarError(Exception):
    """Base class of every error raised on purpose by epsstar."""


class InvalidInputError(EpsstarError, ValueError):
    """An argument or a data value is outside what the computation accepts."""


class InsufficientDataError(InvalidInputError):
    """Fewer records than the statistics need; the message states the minimum."""


class DegenerateDataError(InvalidInputError):
    """The data carry no spread to fit (for example every loss is equal)."""


class InputFileError(InvalidInputError):
    """A file is missing, unreadable, or not of a supported format or shape."""


class FitError(EpsstarError, RuntimeError):
    """A distribution could not be fitted to otherwise valid data."""


class EpsstarWarning(UserWarning):
    """Base class of the warnings epsstar emits."""


class PoorFitWarning(EpsstarWarning):
    """A goodness-of-fit test rejected a fitted distribution at the chosen level."""


class SuspectDataWarning(EpsstarWarning):
    """The data are valid but make the audit unsound (one class; members among non-members)."""


class ColumnOrderWarning(EpsstarWarning):
    """The data's columns were handed to a model by position: it records no column names."""


class OutputReadingWarning(EpsstarWarning):
    """Whether the model returns probabilities or logits was detected on weak evidence."""


class UnseenCategoryWarning(EpsstarWarning):
    """Records held categories the model was not trained on, scored as its library scores
    them (as missing values)."""
