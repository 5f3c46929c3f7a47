"""The training records of a language model as token ids, read as the audit reads them.

The records are read and checked by the audit's own reader of text records
(:func:`~epsstar.audit.data.text_records.scan_text`: CSV, Parquet or JSON Lines with a column
of text, every record text and not blank) and tokenised as the audit's scoring tokenises them
(special tokens included), so that a fine-tuned model is trained on the token ids it is later
audited on. A record longer than ``max_length`` tokens keeps its first ``max_length``; one
warning line gives their count.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.data.text_records import TEXT_SUFFIXES, iter_text_chunks, scan_text
from epsstar.exceptions import EpsstarWarning, InvalidInputError

__all__ = ["TokenisedRecords", "read_records", "tokenised"]


@dataclass(frozen=True, slots=True)
class TokenisedRecords:
    """Each record's token ids (at most ``max_length``) and how many were truncated."""

    ids: tuple[NDArray[np.int64], ...] = field(repr=False)
    max_length: int
    truncated: int

    @property
    def count(self) -> int:
        return len(self.ids)

    @property
    def tokens(self) -> int:
        return int(sum(len(ids) for ids in self.ids))


def read_records(path: Path, column: str) -> list[str]:
    """Every record of the column ``column`` of ``path`` (a .csv, .parquet or .jsonl file),
    checked by the audit's reader of text records."""
    if TEXT_SUFFIXES.get(path.suffix.lower()) in (None, "txt"):
        allowed = ", ".join(sorted(s for s, kind in TEXT_SUFFIXES.items() if kind != "txt"))
        raise InvalidInputError(
            f"--data: text records are read from a file with a column of text ({allowed}). "
            f"Found {str(path)!r}."
        )
    if not path.is_file():
        raise InvalidInputError(f"--data: no such file. Found {str(path)!r}.")
    scan_text(path, column)
    return [text for chunk in iter_text_chunks(path, column) for text in chunk.texts]


def tokenised(texts: list[str], tokenizer: Any, max_length: int) -> TokenisedRecords:
    """``texts`` tokenised as the audit scores them, each cut to ``max_length`` tokens."""
    encoded = tokenizer(texts, add_special_tokens=True, return_attention_mask=False, verbose=False)[
        "input_ids"
    ]
    ids = tuple(np.asarray(row[:max_length], dtype=np.int64) for row in encoded)
    truncated = sum(len(row) > max_length for row in encoded)
    if truncated:
        warnings.warn(
            f"{truncated:,} of {len(texts):,} records are longer than --max-length "
            f"{max_length} tokens and were truncated to their first {max_length}",
            EpsstarWarning,
            stacklevel=2,
        )
    return TokenisedRecords(ids, max_length, truncated)
