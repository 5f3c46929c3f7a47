"""The most exposed records: the members whose score is the strongest evidence of membership.

For a member with score ``s`` (oriented like a loss: lower, more likely a member), the
evidence the audit's threshold test draws from it is the likelihood ratio of the event
"score ≤ s" between members and non-members, ``F_members(s) / F_nonmembers(s)``: calling every
record with a score up to ``s`` a member catches that share of members for that share of
non-members, and Epsilon* is the log of the largest such ratio the data support
(``epsilon-star-negoescu-2024.md``). Under the fitted distributions (when the estimator
fitted whole distributions) the ratio is that of their CDFs; otherwise the empirical CDFs,
the non-members' with one pseudo-record added (``(k + 1) / (n + 1)``), so that a member
below every non-member has a finite ratio.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from epsstar.statistics._validation import FloatArray, finite_vector

__all__ = ["ExposedRecord", "most_exposed"]

#: A fitted distribution's log-CDF, vectorised.
LogCdf = Callable[[FloatArray], FloatArray]


@dataclass(frozen=True, slots=True)
class ExposedRecord:
    """One member: its index among the members, its score, and the log-likelihood ratio of
    the event "score ≤ its score" between members and non-members."""

    index: int
    score: float
    log_likelihood_ratio: float


def most_exposed(
    members: object,
    nonmembers: object,
    k: int,
    *,
    fitted: tuple[LogCdf, LogCdf] | None = None,
) -> tuple[tuple[ExposedRecord, ...], Literal["fitted", "empirical"]]:
    """The ``k`` members with the lowest scores, lowest first (ties by index), and where
    their likelihood ratios come from."""
    m = finite_vector("member scores", members)
    n = finite_vector("non-member scores", nonmembers)
    order = np.lexsort((np.arange(m.size), m))[: max(0, k)]
    chosen = m[order]
    if fitted is not None:
        ratio = fitted[0](chosen) - fitted[1](chosen)
        source: Literal["fitted", "empirical"] = "fitted"
    else:
        below_members = np.searchsorted(np.sort(m), chosen, side="right")
        below_others = np.searchsorted(np.sort(n), chosen, side="right")
        ratio = np.log(below_members / m.size) - np.log((below_others + 1) / (n.size + 1))
        source = "empirical"
    records = tuple(
        ExposedRecord(int(i), float(score), float(r))
        for i, score, r in zip(order, chosen, ratio, strict=True)
    )
    return records, source
