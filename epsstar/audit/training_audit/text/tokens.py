"""The model's tokenizer before any run: where each canary's secret lies in its tokens, and
the check that the fine-tuning will train on every secret.

A canary is a prefix and a secret, the secret always the last part of the record, so a
fine-tuning that masks the loss on a prompt (the prefix) still trains on it, and one that cuts
records to ``--max-length`` tokens cuts the secret first. The secret's tokens are those of the
whole record after the longest run of tokens it shares with its prefix alone
(:func:`secret_span`): a byte-level tokenizer that merges across the boundary moves the span
by a token, never loses it. Before any training run every canary is tokenised as the record
it will be in ``{train}`` (special tokens included, as the loader's model tokenises it) and
one whose tokens exceed the limit is refused by number (:func:`check_canary_lengths`).

The tokenizer is read with transformers' ``AutoTokenizer`` from a local folder, never
downloaded and without the model's own code (the arguments the Hugging Face loader reads a
model folder's tokenizer with).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.model.plugins import import_optional
from epsstar.exceptions import InputFileError, InvalidInputError

__all__ = [
    "CanaryTokenizer",
    "check_canary_lengths",
    "secret_span",
]

#: Largest ``model_max_length`` taken for a real limit (transformers' "no limit" is 1e30).
_SANE_LIMIT: Final = 1_000_000
#: Canary numbers named in a refusal, at most.
_SHOWN: Final = 10


def secret_span(record: Sequence[int], prefix: Sequence[int]) -> tuple[int, int]:
    """The positions ``[start, end)`` of the secret's tokens in ``record``'s tokens: those
    after the longest run ``record`` shares with ``prefix``'s tokens (at least the first
    token, which no model predicts)."""
    shared = 0
    for a, b in zip(record, prefix, strict=False):
        if a != b:
            break
        shared += 1
    return max(1, shared), len(record)


@dataclass(frozen=True, slots=True)
class CanaryTokenizer:
    """A model's tokenizer (``folder``) and the token limit of the fine-tuning."""

    folder: Path
    tokenizer: Any
    name: str

    @classmethod
    def of(cls, folder: Path, option: str) -> CanaryTokenizer:
        """The tokenizer saved in ``folder`` (``option`` names it in errors)."""
        if not folder.is_dir():
            raise InputFileError(
                f"{option} must be a folder holding the model's tokenizer. Found {str(folder)!r}."
            )
        transformers = import_optional("transformers", loader="huggingface")
        logging = transformers.utils.logging
        level = logging.get_verbosity()
        logging.set_verbosity_error()
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(
                str(folder), local_files_only=True, trust_remote_code=False, use_fast=True
            )
        except Exception as error:  # transformers raises many kinds on a folder it cannot read
            reason = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
            raise InputFileError(
                f"{option}: the folder must hold a tokenizer transformers' AutoTokenizer "
                f"reads. Found {type(error).__name__}: {reason}"
            ) from None
        finally:
            logging.set_verbosity(level)
        return cls(folder, tokenizer, type(tokenizer).__name__)

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids, special tokens included (as the model is given a record)."""
        encoded = self.tokenizer(
            list(texts), add_special_tokens=True, return_attention_mask=False, verbose=False
        )["input_ids"]
        return [list(map(int, ids)) for ids in encoded]

    def counts(self, texts: Sequence[str]) -> NDArray[np.int64]:
        """How often each token of the vocabulary occurs in ``texts``."""
        counts = np.zeros(len(self.tokenizer), dtype=np.int64)
        for start in range(0, len(texts), 1024):
            for ids in self.encode(texts[start : start + 1024]):
                counts += np.bincount(np.asarray(ids, dtype=np.int64), minlength=counts.size)[
                    : counts.size
                ]
        return counts

    def plain_tokens(self) -> NDArray[np.int64]:
        """The tokens a secret may be made of: not special, and decoding alone to printable
        text that is not blank and holds no partial character (so that the canary is text a
        file keeps as it is)."""
        special = set(self.tokenizer.all_special_ids)
        plain = []
        for token in range(len(self.tokenizer)):
            if token in special:
                continue
            text = self.tokenizer.decode([token], clean_up_tokenization_spaces=False)
            if text.strip() and text.isprintable() and "\ufffd" not in text:
                plain.append(token)
        return np.asarray(plain, dtype=np.int64)

    def decode(self, tokens: Sequence[int]) -> str:
        return str(self.tokenizer.decode(list(tokens), clean_up_tokenization_spaces=False))

    def limit(self, max_length: int | None) -> int:
        """The most tokens of a record the fine-tuning trains on: ``--max-length`` and the
        tokenizer's ``model_max_length``, the smaller (one of them is needed)."""
        own = getattr(self.tokenizer, "model_max_length", None)
        limits = [n for n in (max_length, own) if isinstance(n, int) and 0 < n < _SANE_LIMIT]
        if not limits:
            raise InvalidInputError(
                f"--max-length must say how many tokens of a record the fine-tuning trains on: "
                f"the tokenizer of {str(self.folder)!r} states no model_max_length. Found none."
            )
        return min(limits)


def _numbers(indices: Sequence[int]) -> str:
    """``3, 17 and 40`` (1-based), at most :data:`_SHOWN` of them."""
    shown = [str(i + 1) for i in indices[:_SHOWN]]
    more = len(indices) - len(shown)
    if more:
        return f"{', '.join(shown)} and {more} more"
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


def check_canary_lengths(
    tokenizer: CanaryTokenizer,
    texts: Sequence[str],
    secret_from: Sequence[int],
    limit: int,
) -> int:
    """Refuse canaries whose secret the fine-tuning would cut (more than ``limit`` tokens) or
    that have no secret token; the most tokens of any canary otherwise."""
    records = tokenizer.encode(texts)
    prefixes = tokenizer.encode(
        [text[:start] for text, start in zip(texts, secret_from, strict=True)]
    )
    spans = [secret_span(r, p) for r, p in zip(records, prefixes, strict=True)]
    empty = [i for i, (start, end) in enumerate(spans) if end <= start]
    if empty:
        raise InvalidInputError(
            f"canar{'y' if len(empty) == 1 else 'ies'} {_numbers(empty)} of {len(texts)} "
            "have no secret token after their prefix under the model's tokenizer: nothing "
            "of them would be scored. Found a prefix that covers the whole record."
        )
    cut = [i for i, (_, end) in enumerate(spans) if end > limit]
    if cut:
        longest = max(spans[i][1] for i in cut)
        raise InvalidInputError(
            f"canar{'y' if len(cut) == 1 else 'ies'} {_numbers(cut)} of {len(texts)} would be "
            f"cut by the fine-tuning's limit of {limit} tokens (--max-length, or the "
            f"tokenizer's model_max_length): their secrets, the end of the record, would not "
            f"be trained on. Found up to {longest} tokens; raise --max-length or use shorter "
            "population records."
        )
    return max(end for _, end in spans)
