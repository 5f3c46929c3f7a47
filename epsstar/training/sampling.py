"""Poisson sampling of a step's batch, drawn from the run's generator in O(q·n) draws.

Every one of n records joins the batch independently with probability q (the
sampling the accountants of :mod:`epsstar.training.accounting` assume). Drawing one
uniform per record costs n draws a step, most of a small model's step on large data.
The gaps between the records chosen by independent Bernoulli(q) trials are independent
Geometric(q) variables on {1, 2, …}, so the sorted indices of the batch are the partial
sums of geometric gaps, minus one, below n: the same distribution from about
q·n + O(√(q·n)) draws. The gaps are drawn in chunks of a
size fixed by n and q (so the draws a step consumes depend on the seed only), in float64
(``torch.Tensor.geometric_`` computes ⌈log u / log(1 − q)⌉ in double precision; a
float64 partial sum is exact for the integers involved).

The two trainers (:mod:`epsstar.training.trainer`, one model, and
:mod:`epsstar.training.batched`, K models at once) draw a step's randomness from each
model's own generator in the same order — the batch (:func:`poisson_rows`), then the
microbatch group of every sampled record (:func:`microbatch_groups`), then the noise of
every parameter tensor — so that a model trained with others is the model trained alone.
"""

from __future__ import annotations

import math

import torch

__all__ = ["microbatch_groups", "poisson_rows"]


def _chunk(n_records: int, rate: float) -> int:
    """Gaps drawn at a time: the expected count plus six standard deviations, plus 16."""
    expected = rate * n_records
    return int(expected + 6.0 * math.sqrt(expected) + 16)


def poisson_rows(n_records: int, rate: float, generator: torch.Generator) -> torch.Tensor:
    """Sorted indices (int64) of the records in one Poisson-sampled batch of rate ``rate``."""
    if rate >= 1.0:
        return torch.arange(n_records)
    chunk = _chunk(n_records, rate)
    found: list[torch.Tensor] = []
    last = -1.0
    while True:
        gaps = torch.empty(chunk, dtype=torch.float64).geometric_(rate, generator=generator)
        positions = gaps.cumsum(0) + last
        inside = positions[positions < n_records]
        found.append(inside)
        if inside.numel() < chunk:
            break
        last = float(positions[-1])
    return torch.cat(found).to(torch.int64)


def microbatch_groups(count: int, n_groups: int, generator: torch.Generator) -> torch.Tensor:
    """A uniform group id in [0, n_groups) for each of ``count`` sampled records.

    Unsampled records need no group: their group would change no step's update, and the
    sampled records' ids are independent of which records were sampled.
    """
    return torch.randint(n_groups, (count,), generator=generator)
