"""Warnings raised inside a block, raised again with a prefix that says what they concern.

An audit estimates Epsilon* more than once (for each attack, for each slice); a warning
of the estimator, such as a poor fit, must say which of them it is about.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

from epsstar.exceptions import EpsstarWarning

__all__ = ["prefixed_warnings"]


@contextlib.contextmanager
def prefixed_warnings(prefix: str) -> Iterator[None]:
    """Every warning raised inside, raised again (same category) as ``prefix + message``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for warning in caught:
        category = warning.category
        message = f"{prefix}{warning.message}"
        if issubclass(category, EpsstarWarning):
            warnings.warn(category(message), stacklevel=3)
        else:
            warnings.warn(message, category, stacklevel=3)
