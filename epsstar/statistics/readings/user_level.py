"""Per-user scores from per-record scores: membership of a person with several records.

A user is a member when all their records are training records, a non-member when all are
population records. Two aggregates of the records' scores (oriented like losses: lower,
more likely a member) make a user's score:

* ``mean``: the mean score of the user's records;
* ``llr_sum``: minus the sum of the records' log-likelihood ratios ``log f_members(s) /
  f_nonmembers(s)``, the Neyman-Pearson statistic for a user whose records are independent
  given membership (stronger than the mean when users have many records). The densities are
  estimated by histograms over 20 bins at the quantiles of the pooled scores, with one
  pseudo-count per bin (Laplace), **cross-fitted by user**: users are cut into two halves at
  random and each half's records are scored by the histograms of the other half, so no
  user's score uses their own membership.

Both are then audited like losses, with users as the records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import NDArray

from epsstar.statistics._validation import FloatArray, finite_vector

__all__ = ["AGGREGATES", "UserScores", "user_scores"]

#: The aggregates, in the order they are reported.
AGGREGATES: Final = ("mean", "llr_sum")
_BINS: Final = 20


@dataclass(frozen=True, slots=True)
class UserScores:
    """One aggregate's score per member user and per non-member user."""

    aggregate: str
    members: FloatArray
    nonmembers: FloatArray


def _by_user(
    values: FloatArray, users: NDArray[np.int64], n_users: int
) -> tuple[FloatArray, FloatArray]:
    """Sum and count of ``values`` per user code ``0 … n_users - 1``."""
    sums = np.bincount(users, weights=values, minlength=n_users).astype(np.float64)
    counts = np.bincount(users, minlength=n_users).astype(np.float64)
    return sums, counts


def _log_ratio(
    scores: FloatArray, member: NDArray[np.bool_], fit: NDArray[np.bool_], edges: FloatArray
) -> FloatArray:
    """log f_members(s) - log f_nonmembers(s) of every score, from the rows ``fit``."""
    bins = np.clip(np.searchsorted(edges, scores, side="right") - 1, 0, _BINS - 1)
    ins = np.bincount(bins[fit & member], minlength=_BINS) + 1.0
    outs = np.bincount(bins[fit & ~member], minlength=_BINS) + 1.0
    table = np.log(ins / ins.sum()) - np.log(outs / outs.sum())
    return np.asarray(table[bins], dtype=np.float64)


def user_scores(
    member_scores: object,
    member_users: NDArray[np.int64],
    nonmember_scores: object,
    nonmember_users: NDArray[np.int64],
    *,
    seed: int = 0,
) -> tuple[UserScores, ...]:
    """Each aggregate's per-user scores (see the module docstring). User codes are
    ``0 … u - 1`` on each side, separately; every code must have a record."""
    m = finite_vector("member scores", member_scores)
    n = finite_vector("non-member scores", nonmember_scores)
    u_m, u_n = int(member_users.max()) + 1, int(nonmember_users.max()) + 1
    scores = np.concatenate([m, n])
    member = np.arange(scores.size) < m.size
    rng = np.random.default_rng([seed, 0x05E])
    halves = (rng.permutation(np.arange(u_m) % 2), rng.permutation(np.arange(u_n) % 2))
    half = np.concatenate([halves[0][member_users], halves[1][nonmember_users]])
    edges = np.quantile(scores, np.linspace(0.0, 1.0, _BINS + 1))
    llr = np.empty(scores.size)
    for k in (0, 1):
        llr[half == k] = _log_ratio(scores, member, half != k, edges)[half == k]
    found = []
    for name, values in (("mean", scores), ("llr_sum", -llr)):
        sums_m, counts_m = _by_user(values[member], member_users, u_m)
        sums_n, counts_n = _by_user(values[~member], nonmember_users, u_n)
        if name == "mean":
            found.append(UserScores(name, sums_m / counts_m, sums_n / counts_n))
        else:
            found.append(UserScores(name, sums_m, sums_n))
    return tuple(found)
