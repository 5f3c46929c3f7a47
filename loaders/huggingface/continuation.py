"""Continuing prefixes with a causal language model, and the probability of a token under the
sampling scheme that continues them.

:func:`continued` runs the model's own decoding loop (its key–value cache, one token a
step): the most likely token at each step (greedy), or one drawn under a
:class:`~epsstar.audit.model.text_model.Sampling` scheme from a seeded generator. It is
written here rather than taken from ``transformers``' ``generate`` so that the scheme a
continuation is drawn under is, to the bit, the one :func:`sampled_log_probs` scores: a
model folder's ``generation_config.json`` may add a repetition penalty, nucleus sampling
or other logits processors that ``generate`` would apply and the probability ``p_z`` would
not know of. The tests compare the greedy loop with ``generate`` itself. The cache is passed
under the name the model's ``forward`` takes (``cache`` since transformers 5.x, before it
``past_key_values``).
"""

from __future__ import annotations

import inspect
from typing import Any

from epsstar.audit.model.text_model import Sampling

__all__ = ["continued", "sampled_log_probs"]


def _kept(logits: Any, sampling: Sampling) -> Any:
    """``logits / temperature`` with every token below the ``top_k``-th largest set to
    ``−inf`` (tokens tied with it kept)."""
    import torch

    scaled = logits / sampling.temperature
    k = min(sampling.top_k, scaled.shape[-1])
    kth = torch.topk(scaled, k, dim=-1).values[..., -1:]
    return scaled.masked_fill(scaled < kth, float("-inf"))


def sampled_log_probs(logits: Any, targets: Any, sampling: Sampling) -> Any:
    """The log-probability that ``sampling`` draws each of ``targets`` ``(N,)`` from the
    logits ``(N, V)`` of its position: the log-softmax of the kept logits, ``−inf`` for a
    target outside the top ``k``."""
    import torch

    log_p = torch.log_softmax(_kept(logits.float(), sampling), dim=-1)
    return log_p.gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def continued(
    model: Any, prefixes: Any, length: int, sampling: Sampling | None, generator: Any
) -> Any:
    """``length`` tokens after each row of ``prefixes`` ``(B, P)`` (no padding), ``(B,
    length)``: greedy when ``sampling`` is ``None``, else drawn with ``generator``."""
    import torch

    keyword = (
        "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    )
    steps = []
    output = model(input_ids=prefixes, use_cache=True)
    for step in range(length):
        logits = output.logits[:, -1, :].float()
        if sampling is None:
            chosen = logits.argmax(dim=-1)
        else:
            probabilities = torch.softmax(_kept(logits, sampling), dim=-1)
            chosen = torch.multinomial(probabilities, 1, generator=generator).squeeze(-1)
        steps.append(chosen)
        if step + 1 < length:
            cache = {keyword: getattr(output, keyword)}
            output = model(input_ids=chosen[:, None], use_cache=True, **cache)
    return torch.stack(steps, dim=1)
