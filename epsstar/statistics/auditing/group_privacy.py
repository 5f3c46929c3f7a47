"""What a per-record claim implies for a group of N records: the claim an audit with repeated
canaries tests.

An audit whose every included canary appears N times in the training table changes N records
between a run with the canary and a run without it, so it can only test what the per-record
claim says of a group of N records:

* (ε, δ)-DP per record gives (Nε, δ_N)-DP for N records, δ_N = δ·(e^{Nε} − 1)/(e^ε − 1)
  (group privacy; Dwork & Roth, "The Algorithmic Foundations of Differential Privacy",
  Theorem 2.2 and its (ε, δ) form): changing the group one record at a time gives the chain
  P[M(D₀) ∈ S] ≤ e^ε P[M(D₁) ∈ S] + δ ≤ … ≤ e^{Nε} P[M(D_N) ∈ S] + δ·Σ_{i<N} e^{iε},
  and Σ_{i<N} e^{iε} = (e^{Nε} − 1)/(e^ε − 1) (N when ε = 0).
* μ-GDP per record gives Nμ-GDP for N records (Dong, Roth & Su 2022, "Gaussian Differential
  Privacy", the group privacy of GDP): the trade-off curves compose along the same chain, and
  G_μ composed N times with itself along it is G_{Nμ}. A claim (ε, δ) read as μ-GDP names
  μ = :func:`~.claims.claimed_mu` (ε, δ), so the group's is Nμ, whose ε at δ_N is the figure
  the μ-GDP reading is compared with (μ_lo > Nμ exactly when its ε at δ_N exceeds it).

A one-run audit (Steinke et al. 2023) then treats each group of N copies as one record of
its analysis, whose inclusion bit changes N records at once: its bound at δ_N refutes the
claim when it exceeds Nε (the μ-GDP bound when μ_lo exceeds Nμ). A bound ε_lo of the group
says of one record ε ≥ ε_lo/N ((ε, δ) bound; at δ the group's δ_N was derived from) and
μ ≥ μ_lo/N (μ-GDP): :meth:`GroupClaim.per_record` and :meth:`GroupClaim.per_record_gdp`.
Repeats make the canaries louder, N-fold in a Gaussian mechanism's sensitivity, but the
group's δ_N grows like e^{(N−1)ε}, so an (ε, δ) audit of a large ε gains little from them;
the μ-GDP reading has no such cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from epsstar.exceptions import InsufficientDataError
from epsstar.plumbing.records.json_records import JsonRecord
from epsstar.statistics._validation import DELTA, check_delta, check_positive_int
from epsstar.statistics.auditing._checks import check_claimed_epsilon
from epsstar.statistics.auditing.claims import claimed_mu
from epsstar.statistics.readings.conversions import gdp_epsilon

__all__ = ["GroupClaim", "group_claim", "group_delta"]


def _log_expm1(x: float) -> float:
    """log(e^x − 1) for x > 0, without overflow for large x."""
    return x + math.log1p(-math.exp(-x)) if x > 1.0 else math.log(math.expm1(x))


def group_delta(epsilon: float, delta: float, repeats: int) -> float:
    """δ_N = δ·(e^{Nε} − 1)/(e^ε − 1) (Nδ when ε = 0), or ``inf`` when it overflows."""
    eps = check_claimed_epsilon(epsilon)
    n = check_positive_int("canary_repeats", repeats, minimum=1)
    if eps == 0.0 or n == 1:
        return delta * n
    log_factor = _log_expm1(n * eps) - _log_expm1(eps)
    return math.inf if log_factor > 700.0 else delta * math.exp(log_factor)


@dataclass(frozen=True, slots=True)
class GroupClaim(JsonRecord):
    """The claim (``epsilon``, ``delta``) of one record as a group of ``repeats`` records
    sees it: ``group_epsilon`` = Nε and ``group_delta`` = δ_N decide the (ε, δ) bound,
    ``group_mu`` = Nμ the μ-GDP reading, compared at δ_N as ``group_epsilon_gdp``."""

    repeats: int
    epsilon: float
    delta: float
    group_epsilon: float
    group_delta: float
    group_mu: float
    group_epsilon_gdp: float

    def tested_epsilon(self, gaussian: bool) -> float:
        """The ε the deciding bound (at :attr:`group_delta`) must exceed to refute."""
        return self.group_epsilon_gdp if gaussian else self.group_epsilon

    def per_record(self, group_bound: float) -> float:
        """The per-record ε an (ε, δ) bound of the group implies: ε_lo/N."""
        return group_bound / self.repeats

    def per_record_gdp(self, group_mu_lower: float) -> float:
        """The per-record ε at δ a μ-GDP bound of the group implies: that of μ_lo/N."""
        mu = group_mu_lower / self.repeats
        return gdp_epsilon(self.delta, mu) if mu > 0.0 else 0.0


def group_claim(epsilon: float, delta: float, repeats: int) -> GroupClaim:
    """The group claim of ``repeats`` copies of each canary (see the module); one line naming
    the repeats when δ_N leaves nothing to refute (δ_N ≥ 0.5, where no bound is defined)."""
    eps = check_claimed_epsilon(epsilon)
    d = check_delta(delta)
    n = check_positive_int("canary_repeats", repeats, minimum=1)
    mu = claimed_mu(eps, d)
    if n == 1:
        return GroupClaim(1, eps, d, eps, d, mu, eps)
    d_n = group_delta(eps, d, n)
    if not d_n < DELTA.high:
        raise InsufficientDataError(
            f"{n} copies of each canary: the claim (epsilon = {eps:g}, delta = {d:.3g}) says of a "
            f"group of {n} records only (epsilon = {n * eps:g}, delta = {d_n:.3g}), and no "
            f"design can refute a delta of {DELTA.high:g} or more: use fewer repeats. "
            f"Found {n}."
        )
    return GroupClaim(n, eps, d, n * eps, d_n, n * mu, gdp_epsilon(d_n, n * mu))
