"""The most exposed records' log-likelihood ratios: the slopes of the ROC convex hull (checked
against a hull built here by the monotone chain, without isotonic regression), never below 0
for the lowest-scored member, and the fixture where the old reading showed -1.386."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from epsstar.statistics.readings.exposure import log_likelihood_ratios, most_exposed


def _cross(o: tuple[int, int], a: tuple[int, int], b: tuple[int, int]) -> int:
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def _hull_ratios(members: np.ndarray, nonmembers: np.ndarray) -> np.ndarray:
    """Each member's shrunk ratio from the ROC convex hull: the ROC points after each sorted
    record, the upper hull by Andrew's monotone chain, and the counts on the hull segment
    that covers the record."""
    m, n = members.size, nonmembers.size
    scores = np.concatenate([members, nonmembers])
    is_member = np.r_[np.ones(m, dtype=bool), np.zeros(n, dtype=bool)]
    order = np.argsort(scores)
    cum_m = np.r_[0, np.cumsum(is_member[order])]
    cum_n = np.r_[0, np.cumsum(~is_member[order])]
    # ROC points scaled by m * n, so that collinear points are found exactly and merged.
    points = [(int(cum_n[j]) * m, int(cum_m[j]) * n) for j in range(scores.size + 1)]
    hull: list[int] = []  # indices into points, upper hull left to right
    for j in range(len(points)):
        while len(hull) >= 2 and _cross(points[hull[-2]], points[hull[-1]], points[j]) >= 0:
            hull.pop()
        hull.append(j)
    ratio_at = np.empty(scores.size)
    for a, b in itertools.pairwise(hull):
        km, kn = cum_m[b] - cum_m[a], cum_n[b] - cum_n[a]
        total = m + n
        ratio_at[order[a:b]] = np.log((km / m + 1 / total) / (kn / n + 1 / total))
    return ratio_at[:m]


@settings(max_examples=150, deadline=None)
@given(
    values=st.lists(
        st.integers(min_value=-10_000, max_value=10_000), min_size=4, max_size=60, unique=True
    ),
    data=st.data(),
)
def test_the_ratios_are_the_slopes_of_the_roc_convex_hull(
    values: list[int], data: st.DataObject
) -> None:
    flags = data.draw(st.lists(st.booleans(), min_size=len(values), max_size=len(values)))
    if all(flags) or not any(flags):
        flags[0], flags[-1] = True, False
    scores = np.asarray(values, dtype=float) / 100
    members, nonmembers = scores[np.asarray(flags)], scores[~np.asarray(flags)]
    # 1e-9: floating-point sums in two orders; a wrong block is off by far more.
    np.testing.assert_allclose(
        log_likelihood_ratios(members, nonmembers), _hull_ratios(members, nonmembers), atol=1e-9
    )
    found, _ = most_exposed(members, nonmembers, 1)
    assert found[0].log_likelihood_ratio >= 0


def test_the_lowest_member_of_a_large_training_table_is_not_read_as_a_non_member() -> None:
    """600 members against 400 non-members, the lowest a member below every non-member: the
    old reading, ``log((1 / 600) / (1 / 401))``, was -0.40; the hull's first block holds
    only members here, so the ratio is ``(k / 600 + 1 / 1000) / (1 / 1000)`` with k ≥ 1."""
    rng = np.random.default_rng(0)
    members = np.r_[-10.0, rng.normal(0, 1, 599)]
    nonmembers = rng.normal(0, 1, 400)
    found, source = most_exposed(members, nonmembers, 3)
    assert source == "isotonic"
    assert found[0].index == 0
    assert found[0].log_likelihood_ratio >= np.log(1 + 1000 / 600)
    assert [r.log_likelihood_ratio for r in found] == sorted(
        (r.log_likelihood_ratio for r in found), reverse=True
    )


def test_well_separated_sides_read_a_large_ratio_and_equal_ones_about_none() -> None:
    rng = np.random.default_rng(1)
    apart, _ = most_exposed(rng.normal(-3, 1, 500), rng.normal(0, 1, 500), 1)
    same = log_likelihood_ratios(rng.normal(0, 1, 500), rng.normal(0, 1, 500))
    assert apart[0].log_likelihood_ratio > 3
    # Equal distributions: the median record's ratio stays near 1 (|log| < 0.5 at 500 a
    # side); a reading that confused the sides' sizes or counts would drift far from it.
    assert abs(float(np.median(same))) < 0.5
