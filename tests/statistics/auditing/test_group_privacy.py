"""The group claim of repeated canaries: δ_N against the chain it comes from, Nμ against the
closed-form μ-GDP curve, and a simulated one-run audit of a Gaussian mechanism exactly at the
claim whose canaries count N-fold (N copies each), which the group claim must never refute and
the per-record claim would."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from epsstar.exceptions import InsufficientDataError
from epsstar.statistics.auditing.claims import claimed_mu
from epsstar.statistics.auditing.group_privacy import group_claim, group_delta
from epsstar.statistics.auditing.one_run.bounds import audit_one_run
from epsstar.statistics.auditing.one_run.choose_k import choose_k


@pytest.mark.parametrize(("epsilon", "repeats"), [(0.5, 2), (2.0, 3), (1.0, 10), (0.0, 4)])
def test_the_group_delta_is_the_sum_along_the_chain_of_neighbours(
    epsilon: float, repeats: int
) -> None:
    # one record at a time: δ + e^ε δ + ... + e^{(N-1)ε} δ
    chain = sum(1e-6 * math.exp(i * epsilon) for i in range(repeats))
    assert group_delta(epsilon, 1e-6, repeats) == pytest.approx(chain, rel=1e-12)


def test_one_copy_is_the_claim_itself() -> None:
    claim = group_claim(1.5, 1e-5, 1)
    assert (claim.group_epsilon, claim.group_delta) == (1.5, 1e-5)
    assert claim.tested_epsilon(True) == claim.tested_epsilon(False) == 1.5


def test_the_gdp_group_is_n_mu_read_at_the_group_delta() -> None:
    claim = group_claim(2.0, 1e-5, 3)
    mu = 3 * claimed_mu(2.0, 1e-5)
    assert claim.group_mu == pytest.approx(mu, rel=1e-12)
    e = claim.group_epsilon_gdp
    curve = norm.cdf(-e / mu + mu / 2) - math.exp(e) * norm.cdf(-e / mu - mu / 2)
    assert curve == pytest.approx(claim.group_delta, rel=1e-8)
    assert claim.per_record(6.0) == 2.0
    assert claim.per_record_gdp(mu) == pytest.approx(2.0, rel=1e-6)


def test_a_group_whose_delta_leaves_nothing_to_refute_is_refused_in_one_line() -> None:
    with pytest.raises(InsufficientDataError, match=r"^9 copies of each canary: .*Found 9\.$"):
        group_claim(4.0, 1e-5, 9)
    assert group_delta(400.0, 1e-5, 3) == math.inf


def _one_run(sensitivity: float, mu: float, seed: int, m: int = 2000) -> tuple[np.ndarray, ...]:
    """Scores of a Gaussian mechanism whose canaries each move the output by ``sensitivity``
    records of a per-record μ-GDP mechanism (noise 1/μ per record, read as a mean shift)."""
    rng = np.random.default_rng(seed)
    included = rng.random(m) < 0.5
    return sensitivity * mu * included + rng.normal(size=m), included


@pytest.mark.parametrize("repeats", [2, 3])
def test_a_mechanism_exactly_at_the_claim_with_repeated_canaries_is_never_refuted(
    repeats: int,
) -> None:
    epsilon, delta, m = 2.0, 1e-5, 2000
    mu = claimed_mu(epsilon, delta)
    group = group_claim(epsilon, delta, repeats)
    k = choose_k(m, group.group_epsilon, group.group_delta, confidence=0.95).k
    k_gdp = choose_k(
        m,
        group.group_epsilon_gdp,
        group.group_delta,
        confidence=0.95,
        method="mahloujifar2024_gdp",
    ).k
    k_record = choose_k(m, epsilon, delta, confidence=0.95).k
    per_record_refuted = 0
    for seed in range(5):
        scores, included = _one_run(repeats, mu, seed)
        kw = {"direction": "members_higher", "confidence": 0.95} | {"included": included}
        at_group = audit_one_run(scores, k_plus=k, k_minus=k, delta=group.group_delta, **kw)
        gdp = audit_one_run(scores, k_plus=k_gdp, k_minus=k_gdp, delta=group.group_delta, **kw)
        assert at_group.epsilon_lower <= group.group_epsilon
        assert gdp.mu_lower <= group.group_mu
        # the same audit read against the per-record claim: what repeats would wrongly refute
        wrong = audit_one_run(scores, k_plus=k_record, k_minus=k_record, delta=delta, **kw)
        per_record_refuted += wrong.epsilon_lower > epsilon
    assert per_record_refuted >= 1


def test_a_mechanism_three_times_past_the_group_is_refuted_by_the_group_gdp_bound() -> None:
    epsilon, delta, m = 2.0, 1e-5, 2000
    mu = claimed_mu(epsilon, delta)
    group = group_claim(epsilon, delta, 2)
    k = choose_k(
        m,
        group.group_epsilon_gdp,
        group.group_delta,
        confidence=0.95,
        method="mahloujifar2024_gdp",
    ).k
    scores, included = _one_run(6, mu, 0)
    bounds = audit_one_run(
        scores,
        included,
        k_plus=k,
        k_minus=k,
        direction="members_higher",
        delta=group.group_delta,
    )
    assert bounds.mu_lower > group.group_mu
    assert bounds.epsilon_lower_gdp is not None
    assert bounds.epsilon_lower_gdp > group.tested_epsilon(True)
