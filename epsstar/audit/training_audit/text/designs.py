"""Text canaries for the audit of a language model's fine-tuning: what they are and how they
are drawn.

Each canary is a prefix and a secret joined by a space, the secret last. The prefix is the
first half of the words of a population record (one not among the training records and not
repeating another); the secret depends on ``--canary-design``
(:data:`~epsstar.statistics.names.CANARY_DESIGNS`):

* ``random`` (the default): :data:`SECRET_TOKENS` tokens drawn uniformly from the tokenizer's
  vocabulary;
* ``rare``: :data:`SECRET_TOKENS` tokens drawn among the rarest in the training records under
  the model's tokenizer (Panda et al. 2025, "Privacy auditing of large language models": a
  secret the rest of the data says little about moves the model's loss on it most), the
  rarest :data:`RARE_SHARE` of the plain tokens (at least twice :data:`SECRET_TOKENS`). With a
  small vocabulary those few tokens recur in many canaries, and a model that learns them from
  the included canaries learns them for the left-out ones too (docs/training-audit.md measures
  it);
* ``population``: the rest of the same population record, an in-distribution canary like a
  table's input canary.

Secrets are built of the tokenizer's plain tokens only
(:meth:`~.tokens.CanaryTokenizer.plain_tokens`), decoded to text; the record the run trains on
is that text, tokenised again by the fine-tuning. A canary's table holds the training table's
columns, the text column holding the canary and the others empty, and one more column,
:data:`SECRET_FROM`, where its secret starts (in characters), which the scoring reads and the
run's training table leaves out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import numpy as np
import pandas as pd

from epsstar.audit.training_audit.canaries import CanaryRecords
from epsstar.audit.training_audit.text.tokens import CanaryTokenizer
from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.constraints import (
    ColumnName,
    Maybe,
    OneOf,
    WholeNumber,
    check_fields,
    constraint,
)
from epsstar.plumbing.records.json_records import JsonRecord
from epsstar.plumbing.records.json_types import JsonObject
from epsstar.statistics.auditing.exposure import Exposure
from epsstar.statistics.names import CANARY_DESIGNS, CanaryDesign

__all__ = ["SECRET_FROM", "SECRET_TOKENS", "TextCanaries", "TextCanaryRecord", "text_canaries"]

#: Tokens drawn for a ``rare`` or ``random`` secret.
SECRET_TOKENS: Final = 8
#: The column of a canary table that says where each canary's secret starts (characters).
SECRET_FROM: Final = "epsstar_secret_from"
#: The rarest share of the plain tokens a ``rare`` secret is drawn from (at least twice
#: :data:`SECRET_TOKENS` tokens).
RARE_SHARE: Final = 0.1


@dataclass(frozen=True, slots=True)
class TextCanaries:
    """What the text canaries of a language model's audit are, checked when built: the
    column of text, the design, the fine-tuning's token limit (``None``: the tokenizer's),
    the folder whose tokenizer the fine-tuning uses and a reference model folder
    (``None``: none) whose loss on each secret is subtracted from the trained model's."""

    text_column: str = field(metadata=constraint(ColumnName()))
    tokenizer: Path
    design: CanaryDesign = field(
        default=CANARY_DESIGNS.names[0], metadata=constraint(OneOf(CANARY_DESIGNS))
    )
    max_length: int | None = field(default=None, metadata=constraint(Maybe(WholeNumber())))
    reference_model: Path | None = None
    #: The option that named ``tokenizer``, for messages (``--init`` or ``--tokenizer``).
    tokenizer_option: str = "--tokenizer"

    def __post_init__(self) -> None:
        check_fields(self)

    def describe(self) -> JsonObject:
        """What decides the canaries (the resume fingerprint of the audit)."""
        return {
            "text_column": self.text_column,
            "design": self.design,
            "tokenizer": str(self.tokenizer),
            "max_length": self.max_length,
            "reference_model": None if self.reference_model is None else str(self.reference_model),
        }

    @property
    def ranked(self) -> bool:
        """Whether the canaries are draws of one secret distribution, so that their exposure
        among the left-out ones means something (Carlini et al. 2019)."""
        return self.design != "population"


@dataclass(frozen=True, slots=True)
class TextCanaryRecord(JsonRecord):
    """What the JSON says of the text canaries: the design, the tokenizer, the token limit,
    the tokens of a drawn secret, the longest canary in tokens, the reference model and the
    included canaries' exposure (``None``: not ranked, or many runs)."""

    text_column: str
    design: CanaryDesign
    tokenizer: str
    tokenizer_folder: str
    max_length: int
    secret_tokens: int | None
    longest_canary_tokens: int
    reference_model: str | None
    exposure: Exposure | None = None


def _words(text: str) -> list[str]:
    return text.split()


def _eligible(population: Sequence[str], train: Sequence[str]) -> np.ndarray:
    """Population rows of two words or more, not in ``train`` and not repeating an earlier
    row."""
    seen = set(train)
    rows = []
    for row, text in enumerate(population):
        if len(_words(text)) >= 2 and text not in seen:
            rows.append(row)
            seen.add(text)
    return np.asarray(rows, dtype=np.int64)


def _secret_pool(
    design: CanaryDesign, tokenizer: CanaryTokenizer, train: Sequence[str], rng: np.random.Generator
) -> np.ndarray:
    plain = tokenizer.plain_tokens()
    if plain.size < SECRET_TOKENS:
        raise InvalidInputError(
            f"--canary-design {design}: the tokenizer must have {SECRET_TOKENS} plain tokens "
            f"(printable, not special) to draw secrets from. Found {plain.size}."
        )
    if design == "random":
        return plain
    counts = tokenizer.counts(train)[plain]
    ties = rng.random(plain.size)
    order = np.lexsort((ties, counts))
    size = max(2 * SECRET_TOKENS, math.ceil(RARE_SHARE * plain.size))
    return plain[order[: min(size, plain.size)]]


def text_canaries(
    population: Sequence[str],
    train: Sequence[str],
    count: int,
    *,
    settings: TextCanaries,
    tokenizer: CanaryTokenizer,
    columns: Sequence[str],
    seed: int,
) -> CanaryRecords:
    """``count`` canaries of ``settings.design`` (see the module), drawn with ``seed``, in a
    table of the training table's ``columns`` and :data:`SECRET_FROM`."""
    eligible = _eligible(population, train)
    left_out = len(population) - eligible.size
    if eligible.size < count:
        raise InvalidInputError(
            f"--population holds {eligible.size} text records that can give a canary's prefix "
            f"(two words or more, not in --train, not repeating another; {left_out} cannot); "
            f"--canaries asks for {count}. Found {eligible.size}."
        )
    rng = np.random.default_rng(seed)
    sources = np.sort(rng.choice(eligible, size=count, replace=False))
    pool = (
        None
        if settings.design == "population"
        else _secret_pool(settings.design, tokenizer, train, rng)
    )
    texts, starts = [], []
    for row in sources:
        words = _words(population[int(row)])
        half = len(words) // 2
        prefix = " ".join(words[:half])
        if pool is None:
            secret = " ".join(words[half:])
        else:
            secret = tokenizer.decode(rng.choice(pool, size=SECRET_TOKENS).tolist()).strip()
        texts.append(f"{prefix} {secret}")
        starts.append(len(prefix))
    frame = pd.DataFrame({name: [None] * count for name in columns})
    frame[settings.text_column] = texts
    frame[SECRET_FROM] = np.asarray(starts, dtype=np.int64)
    return CanaryRecords("text", frame, sources.astype(np.int64), left_out)
