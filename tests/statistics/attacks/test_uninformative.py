"""The rule that an attack's scores carry no information: one value over both sides."""

from __future__ import annotations

import numpy as np
import pytest

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.attacks.uninformative import LIKELY_CAUSES, uninformative_reason
from epsstar.statistics.estimators.estimator import epsilon_star
from epsstar.statistics.summaries.loss_summary import SummaryPlan, summarise_losses


def test_one_value_on_both_sides_is_uninformative_with_the_known_cause() -> None:
    reason = uninformative_reason(np.ones(50), np.ones(70), "lowercase")
    assert reason == "every record scores the same (the text is already lowercase?)"


def test_an_attack_without_a_known_cause_is_told_its_value() -> None:
    assert "qmia" not in LIKELY_CAUSES
    reason = uninformative_reason(np.full(40, -2.5), np.full(40, -2.5), "qmia")
    assert reason == "every record scores the same (-2.5)"


@pytest.mark.parametrize(
    ("members", "nonmembers"),
    [
        (np.ones(50), np.full(50, 2.0)),  # each side constant, the sides apart: a perfect test
        (np.r_[np.ones(49), 0.5], np.ones(50)),  # one record apart: a weak test, still a test
    ],
)
def test_two_distinct_values_make_a_test(members: np.ndarray, nonmembers: np.ndarray) -> None:
    assert uninformative_reason(members, nonmembers, "lowercase") is None
    # and the estimator takes them, where it refuses a single value
    assert epsilon_star(members, nonmembers, delta=1e-3, method="atoms-tested").epsilon >= 0
    with pytest.raises(InvalidInputError, match="all losses are equal"):
        epsilon_star(np.ones(50), np.ones(50), delta=1e-3, method="atoms-tested")


def test_summaries_of_one_value_are_uninformative() -> None:
    members = summarise_losses(np.full(400, 3.0), SummaryPlan(1, 0, k=60))
    nonmembers = summarise_losses(np.full(400, 3.0), SummaryPlan(1, 1, k=60))
    assert uninformative_reason(members, nonmembers, "loss") == "every record scores the same (3)"
    other = summarise_losses(np.r_[np.full(399, 3.0), 4.0], SummaryPlan(1, 1, k=60))
    assert uninformative_reason(members, other, "loss") is None


def test_scores_that_are_not_finite_are_refused_not_classed() -> None:
    with pytest.raises(InvalidInputError, match="non-member scores"):
        uninformative_reason(np.ones(5), np.array([1.0, np.nan]), "zlib")
