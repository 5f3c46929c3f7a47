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

Only the positions that predict a token of their sequence are scored: when the model's
logits are its output layer applied to its body's last hidden states (checked bit for bit
on a probe when the model is loaded, :func:`split_head`; true of the tests' GPT-2 and of
most causal LMs built the same way), the body runs on the padded batch and the output
layer on the kept positions' hidden states, :data:`HEAD_NUMBERS` logits at a time. The
padded positions' logits are never computed and the whole ``batch × positions ×
vocabulary`` tensor never exists; on the benchmark's records (docs/text.md) padding and the
last position of each record were a fifth of the positions.

Under a sampling scheme, each token's log-probability of being drawn is read from the same
chunks (:func:`~epsstar.loaders.huggingface.continuation.sampled_log_probs`), and
:meth:`CausalLanguageModel.continue_tokens` continues prefixes under that scheme or greedily
(:mod:`epsstar.loaders.huggingface.continuation`).

It also meets :class:`~epsstar.audit.model.plugins.LoadedModel` (no features, no classes,
logits), so that a model folder given to a tabular audit is refused with a clear message.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.model.declared_privacy import DeclaredPrivacy
from epsstar.audit.model.text_model import Sampling, TextModelInfo, TokenScores
from epsstar.exceptions import InvalidInputError
from epsstar.loaders.huggingface.continuation import continued, sampled_log_probs
from epsstar.statistics.names import OutputKind

__all__ = ["CHUNK_NUMBERS", "HEAD_NUMBERS", "CausalLanguageModel", "split_head"]

#: Logits scored together (256 KiB of float32: a chunk stays in a core's L2 cache).
CHUNK_NUMBERS: Final = 1 << 16
#: Logits the output layer computes at once (16 MiB of float32; 1,024 positions of a
#: vocabulary of 4,096, 83 of GPT-2's 50,257).
HEAD_NUMBERS: Final = 1 << 22
#: Tokens of the probe :func:`split_head` runs both ways.
PROBE_TOKENS: Final = 8


def split_head(model: Any, context: int, vocabulary: int) -> tuple[Any, Any] | None:
    """The model's body (``base_model``: the network up to its last hidden states) and its
    output layer (``get_output_embeddings()``), when the model's logits are exactly that
    layer applied to the body's last hidden states; ``None`` when not. Checked bit for bit
    on a probe of :data:`PROBE_TOKENS` tokens, so that a model whose logits are more than
    that (scaled, as Cohere's, or capped, as Gemma 2's) is read whole."""
    import torch

    body = getattr(model, "base_model", None)
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if body is None or body is model or head is None:
        return None
    probe = torch.arange(min(PROBE_TOKENS, context))[None, :] % vocabulary
    try:
        with torch.inference_mode():
            whole = model(input_ids=probe, use_cache=False).logits
            split = head(body(input_ids=probe, use_cache=False).last_hidden_state)
    except (AttributeError, TypeError):  # a body that takes other arguments or returns a tuple
        return None
    return (body, head) if torch.equal(whole, split) else None


class CausalLanguageModel:
    """A loaded causal LM, its tokenizer and what the audit records of them."""

    #: The DP guarantee its folder declares (``epsstar.privacy``; None: none), set by the loader.
    declared_privacy: DeclaredPrivacy | None = None

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
        self._head = split_head(model, info.context, info.vocabulary)
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
        self,
        ids: NDArray[np.int64],
        lengths: NDArray[np.int64],
        *,
        moments: bool,
        sampling: Sampling | None = None,
    ) -> TokenScores:
        torch = self._torch
        rows, width = ids.shape
        with torch.inference_mode():
            tokens = torch.from_numpy(np.ascontiguousarray(ids, dtype=np.int64))
            # The positions that predict a token of their sequence: t < length − 1.
            counts = torch.from_numpy(np.asarray(lengths, dtype=np.int64)) - 1
            keep_rows = torch.arange(width - 1)[None, :] < counts[:, None]
            tokens = tokens.to(self._device)
            keep = keep_rows.to(self._device)
            targets = tokens[:, 1:][keep]
            found = self._scored(tokens, keep, targets, (moments, sampling))

        def shaped(values: Any, dtype: type) -> Any:
            """Back to ``(rows, width − 1)``, 0 at padded positions."""
            if values is None:
                return None
            out = np.zeros((rows, width - 1), dtype=dtype)
            out[keep_rows.numpy()] = values.cpu().numpy()
            return out

        log_probs, correct, mu, sigma, sampled = found
        return TokenScores(
            shaped(log_probs, np.float64),
            shaped(correct, np.bool_),
            shaped(mu, np.float64),
            shaped(sigma, np.float64),
            shaped(sampled, np.float64),
        )

    def continue_tokens(
        self, prefixes: NDArray[np.int64], length: int, *, sampling: Sampling | None, seed: int
    ) -> NDArray[np.int64]:
        torch = self._torch
        generator = torch.Generator(device=self._device)
        generator.manual_seed(seed)
        with torch.inference_mode():
            tokens = torch.from_numpy(np.ascontiguousarray(prefixes, dtype=np.int64))
            found = continued(self._model, tokens.to(self._device), length, sampling, generator)
        return np.asarray(found.cpu().numpy(), dtype=np.int64)

    def _scored(
        self, tokens: Any, keep: Any, targets: Any, asked: tuple[bool, Sampling | None]
    ) -> list[Any]:
        """:meth:`_chunked` of the positions in ``keep``, their logits computed
        :data:`HEAD_NUMBERS` at a time by the output layer when the model is its body and
        that layer (:func:`split_head`), else read from the model's whole output."""
        torch = self._torch
        if self._head is None:
            logits = self._model(input_ids=tokens, use_cache=False).logits[:, :-1][keep]
            return self._chunked(logits.float(), targets, asked)
        body, head = self._head
        hidden = body(input_ids=tokens, use_cache=False).last_hidden_state[:, :-1][keep]
        step = max(1, HEAD_NUMBERS // self._info.vocabulary)
        parts = [
            self._chunked(
                head(hidden[start : start + step]).float(),
                targets[start : start + step],
                asked,
            )
            for start in range(0, max(1, hidden.shape[0]), step)
        ]
        return [None if part[0] is None else torch.cat(part) for part in zip(*parts, strict=True)]

    def _chunked(self, flat: Any, targets: Any, asked: tuple[bool, Sampling | None]) -> list[Any]:
        """Per row of ``flat`` (one position's logits): the target's log-probability,
        whether the target is the most likely token, (``moments``) ``μ`` and ``σ`` of
        ``log p(v)`` under ``v ∼ p``, and (``sampling``) the target's log-probability of
        being drawn under it; :data:`CHUNK_NUMBERS` logits at a time."""
        torch = self._torch
        moments, sampling = asked
        positions, vocabulary = flat.shape
        log_probs = flat.new_empty(positions)
        correct = torch.empty(positions, dtype=torch.bool, device=flat.device)
        mu = flat.new_empty(positions) if moments else None
        sigma = flat.new_empty(positions) if moments else None
        sampled = None if sampling is None else flat.new_empty(positions)
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
            if sampled is not None and sampling is not None:
                sampled[part] = sampled_log_probs(flat[part], target, sampling)
        return [log_probs, correct, mu, sigma, sampled]

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
