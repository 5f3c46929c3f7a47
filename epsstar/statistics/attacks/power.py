"""The power of a membership test given by loss-oriented scores: its AUC.

``AUC = P(s_member < s_non-member) + ½ P(s_member = s_non-member)`` over all pairs of a
member and a non-member (the Mann–Whitney statistic; lower scores are more member-like),
by ranks (:func:`epsstar.statistics.utility.auroc`). TPR at fixed FPRs comes with the
readings (:mod:`epsstar.statistics.readings.readings`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from epsstar.statistics._validation import finite_vector
from epsstar.statistics.utility import auroc

__all__ = ["attack_auc"]


def attack_auc(member_scores: ArrayLike, nonmember_scores: ArrayLike) -> float:
    """AUC of the test "member if score ≤ τ" (0.5: no better than chance)."""
    members = finite_vector("member scores", member_scores)
    others = finite_vector("non-member scores", nonmember_scores)
    labels = np.concatenate([np.ones(members.size, np.int64), np.zeros(others.size, np.int64)])
    value, _ = auroc(labels, -np.concatenate([members, others]), 2)
    assert value is not None  # both classes are present
    return value
