"""A Hugging Face causal language model as the audit scores it.

:class:`CausalLanguageModel` meets :class:`~epsstar.audit.model.text_model.TextModel`: it
tokenises with the folder's own tokenizer (its fast, Rust implementation when there is one)
and scores padded batches under ``torch.inference_mode``. Sequences are padded on the right
and the model runs without an attention mask: in a causal model no token attends to those
after it, so right padding changes nothing at the real positions (the tests compare a padded
batch with each sequence alone), and the model keeps its fastest attention path. The
log-probability of each token is read from its position's log-softmax, and the mean and
spread of the log-probabilities over the vocabulary (Min-K%++) from the same log-softmax.
The logits are taken :data:`CHUNK_NUMBERS` numbers (a few positions) at a time, so that each
chunk's log-softmax, maximum and moments are computed while it is in the processor's cache:
over a whole ``batch × positions × vocabulary`` tensor the same arithmetic is bound by memory
(on logits of 32 × 255 × 4,096, one thread, 2026-11-27: 0.26 s for log-sum-exp, gather and
argmax over the whole tensor, 0.09 s for the chunked log-softmax and gather).

It also meets :class:`~epsstar.audit.model.plugins.LoadedModel` (no features, no classes,
logits), so that a model folder given to a tabular audit is refused with a clear message.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.model.text_model import TextModelInfo, TokenScores
from epsstar.exceptions import InvalidInputError
from epsstar.statistics.names import OutputKind

__all__ = ["CHUNK_NUMBERS", "CausalLanguageModel"]

#: Logits scored together (256 KiB of float32: a chunk stays in a core's L2 cache).
CHUNK_NUMBERS: Final = 1 << 16


class CausalLanguageModel:
    """A loaded causal LM, its tokenizer and what the audit records of them."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        info: TextModelInfo,
        files: tuple[Path, ...],
        source: Path,
    ) -> None:
        import torch

        self._torch = torch
        self._model = model
        self._tokenizer = tokenizer
        self._info = info
        self._files = files
        self._source = source
        self._device = torch.device("cpu")

    def to(self, device: str) -> CausalLanguageModel:
        """This model with its weights on ``device``; token ids are moved there and scores
        brought back to the CPU."""
        self._device = self._torch.device(device)
        self._model = self._model.to(self._device)
        return self

    # ------------------------------------------------------------------ TextModel

    @property
    def info(self) -> TextModelInfo:
        return self._info

    @property
    def files(self) -> tuple[Path, ...]:
        return self._files

    @property
    def source(self) -> Path:
        return self._source

    def tokenize(self, texts: Sequence[str]) -> list[NDArray[np.int64]]:
        encoded = self._tokenizer(
            list(texts), add_special_tokens=True, return_attention_mask=False, verbose=False
        )["input_ids"]
        return [np.asarray(ids, dtype=np.int64) for ids in encoded]

    def score_tokens(
        self, ids: NDArray[np.int64], lengths: NDArray[np.int64], *, moments: bool
    ) -> TokenScores:
        torch = self._torch
        with torch.inference_mode():
            tokens = torch.from_numpy(np.ascontiguousarray(ids, dtype=np.int64))
            tokens = tokens.to(self._device)
            logits = self._model(input_ids=tokens, use_cache=False).logits.float()
            rows, width, vocabulary = logits.shape
            # Every position's logits as a row; the last position of each sequence predicts
            # no token of it (target 0, dropped below).
            flat = logits.reshape(rows * width, vocabulary)
            targets = torch.cat((tokens[:, 1:], tokens.new_zeros(rows, 1)), dim=1).reshape(-1)
            found = self._chunked(flat, targets, moments=moments)

        def shaped(values: Any) -> Any:
            """Back to ``(rows, width − 1)``: the positions that predict a token."""
            return None if values is None else values.reshape(rows, width)[:, :-1].cpu().numpy()

        log_probs, correct, mu, sigma = (shaped(x) for x in found)
        return TokenScores(
            log_probs.astype(np.float64),
            correct,
            None if mu is None else mu.astype(np.float64),
            None if sigma is None else sigma.astype(np.float64),
        )

    def _chunked(self, flat: Any, targets: Any, *, moments: bool) -> list[Any]:
        """Per row of ``flat`` (one position's logits): the target's log-probability,
        whether the target is the most likely token, and (``moments``) ``μ`` and ``σ`` of
        ``log p(v)`` under ``v ∼ p``; :data:`CHUNK_NUMBERS` logits at a time."""
        torch = self._torch
        positions, vocabulary = flat.shape
        log_probs = flat.new_empty(positions)
        correct = torch.empty(positions, dtype=torch.bool, device=flat.device)
        mu = flat.new_empty(positions) if moments else None
        sigma = flat.new_empty(positions) if moments else None
        step = max(1, CHUNK_NUMBERS // vocabulary)
        for start in range(0, positions, step):
            part = slice(start, start + step)
            log_p = torch.log_softmax(flat[part], dim=-1)
            target = targets[part]
            log_probs[part] = log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
            correct[part] = log_p.argmax(dim=-1) == target
            if mu is not None and sigma is not None:
                p = log_p.exp()
                mean = (p * log_p).sum(dim=-1)
                second = (p * log_p * log_p).sum(dim=-1)
                mu[part] = mean
                sigma[part] = (second - mean * mean).clamp_min(0.0).sqrt()
        return [log_probs, correct, mu, sigma]

    # ---------------------------------------------------------------- LoadedModel

    @property
    def n_features(self) -> int | None:
        return None

    @property
    def classes(self) -> tuple[object, ...] | None:
        return None

    @property
    def output_kind(self) -> OutputKind:
        return "logits"

    def predict(self, features: object) -> NDArray[np.float64]:
        raise InvalidInputError(
            f"{self._source} is a causal language model: it is audited on text records "
            f"(--text-column NAME, or .txt files), not on a table's features. Found features."
        )
