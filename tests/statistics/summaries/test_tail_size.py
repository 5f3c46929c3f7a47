"""The tail size: the tail fits' default and the extremes a summary keeps."""

from __future__ import annotations

from epsstar.statistics.summaries.tail_size import default_tail_size


def test_default_tail_size() -> None:
    assert default_tail_size(100) == 20
    assert default_tail_size(10_000) == 300
    assert default_tail_size(10) == 5
    assert default_tail_size(10_000, 0.1) == 30
    assert default_tail_size(10_000, 0.01) == 5  # never fewer than 5 excesses
