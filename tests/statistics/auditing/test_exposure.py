"""The exposure of included canaries among the left-out ones (Carlini et al. 2019): the
rank counted by hand, its two ends, ties, direction and refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from epsstar.exceptions import InsufficientDataError
from epsstar.statistics.auditing.exposure import canary_exposures, exposure_summary


def test_exposure_is_log_candidates_less_log_rank_among_the_left_out() -> None:
    # losses: in 0.5 beats all three left out (rank 1), in 2.5 beats one (rank 3), in 9 none
    scores = np.array([0.5, 1.0, 2.5, 2.0, 9.0, 3.0])
    included = np.array([True, False, True, False, True, False])
    found = canary_exposures(scores, included, "members_lower")
    assert found == pytest.approx([2.0, 2.0 - math.log2(3), 0.0])
    summary = exposure_summary(scores, included, "members_lower")
    assert summary.mean == pytest.approx(found.mean())
    assert summary.largest == pytest.approx(2.0)
    assert summary.possible == pytest.approx(2.0)
    assert (summary.included, summary.left_out) == (3, 3)


def test_ties_count_half_and_higher_scores_can_be_member_like() -> None:
    scores = np.array([1.0, 1.0, 0.0])
    included = np.array([True, False, False])
    # one left-out canary ties (half a place), the other scores lower: rank 1 + 1 + 0.5
    assert canary_exposures(scores, included, "members_lower") == pytest.approx(
        [math.log2(3) - math.log2(2.5)]
    )
    assert canary_exposures(scores, included, "members_higher") == pytest.approx(
        [math.log2(3) - math.log2(1.5)]
    )


@pytest.mark.parametrize("bits", [[True, True], [False, False]])
def test_exposure_needs_canaries_in_and_out(bits: list[bool]) -> None:
    with pytest.raises(InsufficientDataError, match="both included and left out"):
        canary_exposures(np.array([1.0, 2.0]), np.array(bits), "members_lower")
