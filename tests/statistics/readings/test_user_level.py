"""Per-user scores (``epsstar/statistics/readings/user_level.py``): the mean by hand, and the
cross-fitted log-likelihood-ratio sum recomputed record by record in plain Python (the halves
drawn as the module documents them, bins found by ``bisect``, Laplace-smoothed counts)."""

from __future__ import annotations

import bisect
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.readings.user_level import AGGREGATES, UserScores, user_scores


def _halves(u_members: int, u_nonmembers: int, seed: int) -> tuple[list[int], list[int]]:
    """Each user's half: a random balanced split of each side (the module's seed stream)."""
    rng = np.random.default_rng([seed, 0x05E])
    members = rng.permutation([u % 2 for u in range(u_members)]).tolist()
    nonmembers = rng.permutation([u % 2 for u in range(u_nonmembers)]).tolist()
    return members, nonmembers


def _llr_sums(
    m: list[float], m_users: list[int], n: list[float], n_users: list[int], seed: int
) -> tuple[list[float], list[float]]:
    scores = m + n
    is_member = [True] * len(m) + [False] * len(n)
    halves_m, halves_n = _halves(max(m_users) + 1, max(n_users) + 1, seed)
    half = [halves_m[u] for u in m_users] + [halves_n[u] for u in n_users]
    edges = np.quantile(scores, np.linspace(0, 1, 21)).tolist()

    def bin_of(s: float) -> int:
        return min(max(bisect.bisect_right(edges, s) - 1, 0), 19)

    llr = []
    for i, s in enumerate(scores):
        other = [j for j in range(len(scores)) if half[j] != half[i]]
        ins = [1.0] * 20
        outs = [1.0] * 20
        for j in other:
            (ins if is_member[j] else outs)[bin_of(scores[j])] += 1
        b = bin_of(s)
        llr.append(math.log(ins[b] / sum(ins)) - math.log(outs[b] / sum(outs)))
    sums_m = [0.0] * (max(m_users) + 1)
    sums_n = [0.0] * (max(n_users) + 1)
    for i, u in enumerate(m_users):
        sums_m[u] -= llr[i]
    for i, u in enumerate(n_users):
        sums_n[u] -= llr[len(m) + i]
    return sums_m, sums_n


def test_the_mean_by_hand() -> None:
    found = user_scores(
        [1.0, 2.0, 3.0, 4.0, 10.0],
        np.array([0, 0, 1, 1, 2]),
        [5.0, 7.0, 6.0],
        np.array([1, 0, 0]),
    )
    assert tuple(s.aggregate for s in found) == AGGREGATES == ("mean", "llr_sum")
    assert isinstance(found[0], UserScores)
    np.testing.assert_array_equal(found[0].members, [1.5, 3.5, 10.0])
    np.testing.assert_array_equal(found[0].nonmembers, [6.5, 5.0])


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(0, 5), min_size=2, max_size=30),
    st.lists(st.integers(0, 6), min_size=2, max_size=30),
    st.integers(0, 2**16),
    st.integers(0, 3),
)
def test_llr_sum_recomputed_record_by_record(
    member_users: list[int], nonmember_users: list[int], seed: int, ties: int
) -> None:
    # user codes 0 … u − 1 with a record each; scores rounded to make ties at bin edges
    m_users = sorted(set(member_users)) + member_users
    n_users = sorted(set(nonmember_users)) + nonmember_users
    m_codes = {u: i for i, u in enumerate(sorted(set(member_users)))}
    n_codes = {u: i for i, u in enumerate(sorted(set(nonmember_users)))}
    m_users = [m_codes[u] for u in m_users]
    n_users = [n_codes[u] for u in n_users]
    rng = np.random.default_rng(seed)
    m = np.round(rng.normal(0.0, 1.0, len(m_users)), ties).tolist()
    n = np.round(rng.normal(0.7, 1.0, len(n_users)), ties).tolist()
    found = user_scores(m, np.array(m_users), n, np.array(n_users), seed=seed)
    expected_m, expected_n = _llr_sums(m, m_users, n, n_users, seed)
    # sums of at most 60 logs in another order: rounding only
    np.testing.assert_allclose(found[1].members, expected_m, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(found[1].nonmembers, expected_n, rtol=1e-10, atol=1e-10)
    # the mean, for the same users
    means_m = [
        np.mean([s for s, u in zip(m, m_users, strict=True) if u == k]) for k in m_codes.values()
    ]
    np.testing.assert_allclose(found[0].members, means_m, rtol=1e-12)


def test_llr_sum_separates_users_with_many_records() -> None:
    # 40 users a side, 10 records each; members' scores are N(0, 0.3²), non-members'
    # N(0, 1.5²): the same mean, so the mean aggregate is a coin flip, while the
    # Neyman–Pearson sum, which reads the densities, tells the users apart.
    rng = np.random.default_rng(0)
    users = np.repeat(np.arange(40), 10)
    m, n = rng.normal(0.0, 0.3, 400), rng.normal(0.0, 1.5, 400)
    mean, llr = user_scores(m, users, n, users, seed=1)

    def auc(scores: UserScores) -> float:
        # P(a member user's score < a non-member user's): lower is member-like
        return float(np.mean(scores.members[:, None] < scores.nonmembers[None, :]))

    # a null AUC over 40 × 40 users has sd ≈ 0.065: 0.3–0.7 is ±3 sd (seed 0 gives 0.53)
    assert 0.3 < auc(mean) < 0.7
    # seed 0 gives 1.0; 0.95 leaves room for another histogram, not for a broken ratio
    assert auc(llr) > 0.95
    # the seed changes the halves and hence the llr scores, not the means
    other_mean, other_llr = user_scores(m, users, n, users, seed=2)
    np.testing.assert_array_equal(other_mean.members, mean.members)
    assert not np.array_equal(other_llr.members, llr.members)
    # the default seed is 0
    default = user_scores(m, users, n, users)
    np.testing.assert_array_equal(
        default[1].members, user_scores(m, users, n, users, seed=0)[1].members
    )


def test_scores_must_be_finite() -> None:
    with pytest.raises(InvalidInputError, match=r"^member scores must be finite"):
        user_scores([1.0, math.nan], np.array([0, 1]), [1.0], np.array([0]))
    with pytest.raises(InvalidInputError, match=r"^non-member scores must be finite"):
        user_scores([1.0], np.array([0]), [math.inf], np.array([0]))
