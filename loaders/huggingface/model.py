"""A Hugging Face causal language model as the audit scores it.

:class:`CausalLanguageModel` meets :class:`~epsstar.audit.model.text_model.TextModel`: it
tokenises with the folder's own tokenizer (its fast, Rust implementation when there is one)
and scores padded batches under ``torch.inference_mode``. Sequences are padded on the right
and the model runs without an attention mask: in a causal model no token attends to those
after it, so right padding changes nothing at the real positions (the tests compare a padded
batch with each sequence alone), and the model keeps its fastest attention path. The
log-probability of each token is its logit minus the log-sum-exp of its position's logits;
the mean and spread of the log-probabilities over the vocabulary (Min-K%++) are computed
from the log-softmax, a few rows at a time so that the ``rows × positions × vocabulary``
tensors stay within :data:`MOMENTS_BUDGET` numbers.

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

__all__ = ["MOMENTS_BUDGET", "CausalLanguageModel"]

#: Most numbers in one ``rows × positions × vocabulary`` tensor of the Min-K%++ moments.
MOMENTS_BUDGET: Final = 1 << 25


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
            logits = self._model(input_ids=tokens, use_cache=False).logits[:, :-1, :].float()
            targets = tokens[:, 1:]
            chosen = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
            log_probs = chosen - torch.logsumexp(logits, dim=-1)
            correct = logits.argmax(dim=-1) == targets
            mu = sigma = None
            if moments:
                mu, sigma = self._moments(logits)
        return TokenScores(
            log_probs.double().numpy(),
            correct.numpy(),
            None if mu is None else mu.double().numpy(),
            None if sigma is None else sigma.double().numpy(),
        )

    def _moments(self, logits: Any) -> tuple[Any, Any]:
        """``μ`` and ``σ`` of ``log p(v)`` under ``v ∼ p`` at every position, a few rows of
        the batch at a time."""
        torch = self._torch
        rows, positions, vocabulary = logits.shape
        step = max(1, MOMENTS_BUDGET // max(1, positions * vocabulary))
        means, spreads = [], []
        for start in range(0, rows, step):
            log_p = torch.log_softmax(logits[start : start + step], dim=-1)
            p = log_p.exp()
            mean = (p * log_p).sum(dim=-1)
            second = (p * log_p * log_p).sum(dim=-1)
            means.append(mean)
            spreads.append((second - mean * mean).clamp_min(0.0).sqrt())
        return torch.cat(means), torch.cat(spreads)

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
