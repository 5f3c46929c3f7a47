"""How far the tiny GPT-2's float32 token scores may move (``tests/numerics.py``, point 4),
computed from one token sequence's own hidden states and distributions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from epsstar.statistics.attacks.text_scores import MIN_SIGMA
from tests.numerics import (
    log_softmax_tolerance,
    logits_magnitude,
    moments_tolerance,
    standardised_tolerance,
    sum_tolerance,
    transformer_path,
)

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class TokenTolerances:
    """Per predicted position of one sequence: the float64 log-distribution of the model's
    logits, the chosen tokens' log-probabilities, the Min-K%++ moments, and how far each may
    move."""

    log_probs: FloatArray  # (positions, vocabulary)
    chosen: FloatArray
    log_prob: FloatArray
    mu: FloatArray
    sigma: FloatArray
    mu_tolerance: FloatArray
    sigma_tolerance: FloatArray

    @property
    def standardised(self) -> FloatArray:
        """How far each token's Min-K%++ score ``(l − μ)/σ`` may move."""
        return standardised_tolerance(
            self.chosen,
            self.mu,
            np.maximum(self.sigma, MIN_SIGMA),
            (self.log_prob, self.mu_tolerance, self.sigma_tolerance),
        )

    @property
    def knife_edges(self) -> int:
        """Positions whose two likeliest tokens lie within the tolerance of each other (the
        predicted token may switch)."""
        top_two = np.sort(self.log_probs, axis=-1)[:, -2:]
        return int(np.count_nonzero(top_two[:, 1] - top_two[:, 0] <= 2 * self.log_prob))


def whole_path(gpt2: Any, positions: int) -> int:
    """The sums on the path from a token to its logits through ``gpt2``."""
    config = gpt2.config
    return transformer_path(
        config.n_embd, config.n_layer, config.n_embd // config.n_head, positions
    )


def token_tolerances(
    gpt2: Any, ids: NDArray[np.int64], path: int, softmaxes: int
) -> TokenTolerances:
    """``ids`` (one sequence) through ``gpt2``: tolerances for two evaluations whose logits
    differ in the sums of ``path`` (``whole_path``, the output layer's width, or 0 for the
    same logits) and that take ``softmaxes`` float32 log-softmaxes."""
    import torch

    with torch.inference_mode():
        out = gpt2(input_ids=torch.from_numpy(ids[None]), output_hidden_states=True)
    hidden = out.hidden_states[-1][0, :-1].double().numpy()
    logs = torch.log_softmax(out.logits[0, :-1].double(), -1).numpy()
    output_layer = gpt2.get_output_embeddings().weight.detach().double().numpy()
    logits = sum_tolerance(path, logits_magnitude(hidden, output_layer)) if path else 0.0
    log_prob = np.broadcast_to(
        log_softmax_tolerance(logits, output_layer.shape[0], softmaxes), (hidden.shape[0],)
    )
    mu, sigma, mu_tolerance, sigma_tolerance = moments_tolerance(logs, log_prob)
    chosen = np.take_along_axis(logs, ids[1:, None], -1)[:, 0]
    return TokenTolerances(logs, chosen, log_prob, mu, sigma, mu_tolerance, sigma_tolerance)
