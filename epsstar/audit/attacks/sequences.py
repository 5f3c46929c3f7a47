"""What the text attacks take from the scoring of text records by a language model.

The text engine (:mod:`epsstar.audit.engines.text_scoring`) runs the target model over every
record once (and once more over the records in lower case when the lowercase attack is
asked for) and keeps, per record, the statistics of
:mod:`epsstar.statistics.attacks.text_scores` that the attacks asked for need; the scorers of
:mod:`epsstar.audit.attacks.kinds` combine them into each attack's score.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from epsstar.statistics._validation import FloatArray

__all__ = ["SequenceStatistics", "TextInputs"]


@dataclass(frozen=True, slots=True)
class SequenceStatistics:
    """Per-record statistics of one side (training or population), in row order.

    ``loss`` is the mean token loss, ``tokens`` the number of tokens scored, ``windows`` the
    number of context windows each record was scored in (1 unless it is longer than the
    model's context), ``zlib_bytes`` the zlib-compressed length of its UTF-8 text;
    ``min_k`` and ``min_k_plus_plus`` the Min-K% and Min-K%++ scores and ``lowercase_loss``
    the mean token loss on the lower-case text (``None`` when no attack asked for them);
    ``correct`` the tokens the model predicted as its most likely next token.
    """

    loss: FloatArray = field(repr=False)
    tokens: NDArray[np.int64] = field(repr=False)
    windows: NDArray[np.int64] = field(repr=False)
    zlib_bytes: NDArray[np.int64] = field(repr=False)
    correct: int = 0
    min_k: FloatArray | None = field(default=None, repr=False)
    min_k_plus_plus: FloatArray | None = field(default=None, repr=False)
    lowercase_loss: FloatArray | None = field(default=None, repr=False)

    @property
    def rows(self) -> int:
        return int(self.loss.size)


@dataclass(frozen=True, slots=True)
class TextInputs:
    """Both sides' statistics and the share ``min_k`` of tokens Min-K% averaged."""

    train: SequenceStatistics
    population: SequenceStatistics
    min_k: float
