"""The sliding windows that score long texts: every token scored once, with context.

(The per-sequence scores themselves are tested in their mirror,
``tests/statistics/attacks/test_text_scores.py``.)"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from epsstar.audit.engines.text_scoring import _pieces


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
