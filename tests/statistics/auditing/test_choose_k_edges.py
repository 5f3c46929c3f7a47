"""choose_k at its smallest input and with many canaries."""

from __future__ import annotations

from epsstar.statistics.auditing.one_run.choose_k import _candidates, choose_k


def test_two_canaries_are_enough_to_choose() -> None:
    chosen = choose_k(2, 1.0, 1e-5)
    assert (chosen.k, chosen.canaries, chosen.delta) == (1, 2, 1e-5)


def test_candidates_reach_half_the_canaries() -> None:
    grid = _candidates(1000)
    assert grid[0] == 1
    assert grid[-1] == 1000
    assert grid == sorted(set(grid))


def test_ties_go_to_the_smallest_k() -> None:
    # 10 canaries cannot refute ε = 0.01 at any k: every expected bound is 0, a tie
    chosen = choose_k(10, 0.01, 1e-5)
    assert chosen.expected_epsilon_lower == 0.0
    assert chosen.k == 1
