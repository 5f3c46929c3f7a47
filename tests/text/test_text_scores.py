"""The per-sequence scores of the text attacks and the sliding windows, checked against
plain re-computations (sorting in Python, torch's log-softmax and variance)."""

from __future__ import annotations

import heapq
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from epsstar.audit.engines.text_scoring import _pieces
from epsstar.statistics.attacks.text_scores import (
    mean_token_loss,
    min_k_percent,
    min_k_plus_plus,
    vocabulary_moments,
)

rows = st.lists(
    st.lists(st.floats(-30, 0, allow_nan=False), min_size=1, max_size=20), min_size=1, max_size=6
)


def _padded(values: list[list[float]]) -> tuple[np.ndarray, np.ndarray]:
    width = max(len(v) for v in values)
    array = np.full((len(values), width), 123.0)  # padding that would show if read
    mask = np.zeros_like(array, dtype=bool)
    for i, v in enumerate(values):
        array[i, : len(v)] = v
        mask[i, : len(v)] = True
    return array, mask


@given(rows, st.floats(0.01, 1.0))
def test_min_k_is_the_mean_of_the_least_likely_tokens(values: list[list[float]], k: float) -> None:
    array, mask = _padded(values)
    found = min_k_percent(array, mask, k)
    for row, v in zip(found, values, strict=True):
        taken = max(1, math.floor(k * len(v) + 1e-9))
        # float sums in another order: 1e-9 relative protects only against rounding
        assert row == pytest.approx(-sum(heapq.nsmallest(taken, v)) / taken, rel=1e-9, abs=1e-12)


@given(rows)
def test_the_mean_token_loss_reads_only_real_tokens(values: list[list[float]]) -> None:
    array, mask = _padded(values)
    expected = [-sum(v) / len(v) for v in values]
    # rounding of a sum of at most 20 terms
    assert mean_token_loss(array, mask) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_min_k_plus_plus_standardises_by_torch_s_moments() -> None:
    torch = pytest.importorskip("torch")
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 7, 50, generator=generator, dtype=torch.float64) * 3
    log_p = torch.log_softmax(logits, dim=-1)
    targets = torch.randint(0, 50, (3, 7), generator=generator)
    chosen = log_p.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    p = log_p.exp()
    mu = (p * log_p).sum(-1)
    # the central second moment, not E[x^2] - mu^2 as the module computes it
    sigma = (p * (log_p - mu.unsqueeze(-1)) ** 2).sum(-1).sqrt()
    ours_mu, ours_sigma = vocabulary_moments(log_p.numpy())
    # two formulas for one variance in float64: rounding only
    np.testing.assert_allclose(ours_mu, mu.numpy(), rtol=1e-10)
    np.testing.assert_allclose(ours_sigma, sigma.numpy(), rtol=1e-8)
    z = ((chosen - mu) / sigma).numpy()
    mask = np.ones_like(z, dtype=bool)
    expected = [-np.sort(row)[: max(1, math.floor(0.3 * 7))].mean() for row in z]
    found = min_k_plus_plus(chosen.numpy(), mu.numpy(), sigma.numpy(), mask, 0.3)
    np.testing.assert_allclose(found, expected, rtol=1e-8)


@given(st.lists(st.integers(2, 300), min_size=1, max_size=5), st.integers(2, 64))
def test_windows_score_every_token_once_with_context(lengths: list[int], context: int) -> None:
    stride = max(1, context // 2)
    scored: dict[int, list[int]] = {r: [] for r in range(len(lengths))}
    for piece in _pieces(lengths, context):
        assert 0 < piece.end - piece.start <= context
        assert piece.start < piece.scored_from or piece.scored_from == 1
        if piece.start > 0:  # a later window: every scored token sees a full overlap
            assert piece.scored_from - piece.start >= context - stride
        scored[piece.record] += list(range(piece.scored_from, piece.end))
    for record, n in enumerate(lengths):
        # token 0 is never predicted; every other token exactly once
        assert scored[record] == list(range(1, n))
