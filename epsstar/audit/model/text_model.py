"""What the audit asks of a causal language model: tokens in, token log-probabilities out.

A loader of language models (``epsstar.loaders.huggingface``) returns a model that, besides
the :class:`~epsstar.audit.model.plugins.LoadedModel` members, meets :class:`TextModel`: it
tokenises text with its own tokenizer and, for a batch of token sequences padded on the
right, returns the log-probability of every token given those before it
(:class:`TokenScores`), when asked the mean and spread of the log-probabilities over the
whole vocabulary at every position (Min-K%++, :mod:`epsstar.statistics.attacks.text_scores`)
and, under a :class:`Sampling` scheme, each token's log-probability of being drawn (the
extraction test's ``p_z``). For the extraction test it also continues prefixes of one length
(:meth:`TextModel.continue_tokens`), greedily or by sampling: the one method a language
model needs beyond scoring. The audit does the rest with numpy: windows, batches, masks,
per-record statistics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.json_records import JsonRecord

__all__ = ["Adapter", "Sampling", "TextModel", "TextModelInfo", "TokenScores", "text_model_of"]


@dataclass(frozen=True, slots=True)
class TokenScores:
    """One batch of ``B`` sequences of ``T`` tokens (padded on the right), scored.

    Position ``t - 1`` of each ``(B, T − 1)`` array is about token ``t`` (the first token
    is not predicted): ``log_probs`` its log-probability, ``correct`` whether it was the
    model's most likely next token, ``mu`` and ``sigma`` the mean and standard deviation of
    ``log p(v)`` under ``v ∼ p`` over the vocabulary (``None`` unless asked for),
    ``sampled_log_probs`` its log-probability of being drawn under a :class:`Sampling`
    scheme (``None`` unless one is given). Values at padded positions are meaningless.
    """

    log_probs: NDArray[np.float64] = field(repr=False)
    correct: NDArray[np.bool_] = field(repr=False)
    mu: NDArray[np.float64] | None = field(default=None, repr=False)
    sigma: NDArray[np.float64] | None = field(default=None, repr=False)
    sampled_log_probs: NDArray[np.float64] | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class Sampling(JsonRecord):
    """How a next token is sampled: the logits divided by ``temperature``, only the
    ``top_k`` largest kept (every token tied with the ``k``-th too) and the softmax taken
    over them; a token outside them has probability 0."""

    temperature: float
    top_k: int


@dataclass(frozen=True, slots=True)
class Adapter(JsonRecord):
    """A LoRA adapter applied to a base model: its folder, the base folder, its rank and
    scaling and the modules it changed."""

    path: str
    base_model: str
    rank: int
    alpha: float
    modules: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TextModelInfo(JsonRecord):
    """What the report and the JSON say of a language model: its architecture, size,
    context, vocabulary, tokenizer and the adapter applied (``None``: none)."""

    architecture: str
    model_type: str
    parameters: int
    dtype: str
    context: int
    vocabulary: int
    tokenizer: str
    adapter: Adapter | None = None


@runtime_checkable
class TextModel(Protocol):
    """A causal language model ready to score text (see the module docstring)."""

    @property
    def info(self) -> TextModelInfo:
        """What the model is (for the JSON and the report)."""
        ...

    @property
    def files(self) -> tuple[Path, ...]:
        """Every file it was read from (the configuration first), each hashed."""
        ...

    def tokenize(self, texts: Sequence[str]) -> list[NDArray[np.int64]]:
        """Each text's token ids, as the model's tokenizer encodes it for the model
        (special tokens such as a beginning-of-sequence token included)."""
        ...

    def score_tokens(
        self,
        ids: NDArray[np.int64],
        lengths: NDArray[np.int64],
        *,
        moments: bool,
        sampling: Sampling | None = None,
    ) -> TokenScores:
        """The :class:`TokenScores` of ``ids`` ``(B, T)``, row ``b`` holding ``lengths[b]``
        tokens followed by padding (with ``sampled_log_probs`` under ``sampling``)."""
        ...

    def continue_tokens(
        self, prefixes: NDArray[np.int64], length: int, *, sampling: Sampling | None, seed: int
    ) -> NDArray[np.int64]:
        """``length`` tokens after each row of ``prefixes`` ``(B, P)``, ``(B, length)``: each
        the most likely next token (``sampling=None``: greedy) or one drawn under
        ``sampling``, from a generator seeded with ``seed``."""
        ...


def text_model_of(model: object, loader: str) -> TextModel:
    """``model`` if it is a language model that scores text, else a one-line refusal."""
    if not isinstance(model, TextModel):
        raise InvalidInputError(
            f"text records (--text-column) are scored by a causal language model (a Hugging "
            f"Face model folder). Found a model loaded by the {loader} loader."
        )
    return model
