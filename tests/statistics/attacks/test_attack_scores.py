"""Offline LiRA and RMIA scores: independent computations and properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.attacks.confidence import log_odds, probability_from_log_odds
from epsstar.statistics.attacks.lira import lira_offline
from epsstar.statistics.attacks.power import attack_auc
from epsstar.statistics.attacks.rmia import rmia_offline
from epsstar.statistics.losses import compute_losses

finite = st.floats(-30, 30, allow_nan=False)


def test_log_odds_is_minus_the_logit_loss_and_exact_from_logits() -> None:
    rng = np.random.default_rng(0)
    logits = rng.normal(scale=5, size=(50, 4))
    labels = rng.integers(0, 4, 50)
    from scipy.special import softmax as soft

    p_true = soft(logits, axis=1)[np.arange(50), labels]
    expected = np.log(p_true) - np.log1p(-p_true)
    from_logits = -compute_losses(labels, logits, outputs="logits")
    np.testing.assert_allclose(from_logits, expected, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(log_odds(p_true), expected, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(probability_from_log_odds(expected), p_true, rtol=1e-12)
    assert np.isfinite(log_odds([0.0, 1.0])).all()


def test_lira_against_scipy_per_record_gaussians() -> None:
    rng = np.random.default_rng(1)
    references = rng.normal(size=(70, 30)) + rng.normal(size=30)
    target = rng.normal(size=30) + 1.0
    result = lira_offline(target, references)
    assert result.variance == "per_record"  # 70 ≥ 64 reference models
    for i in range(30):
        mu, sd = references[:, i].mean(), references[:, i].std(ddof=1)
        one_sided = stats.norm(mu, sd).sf(target[i])  # 1 − CDF of the target's φ
        assert result.likelihoods[i] == pytest.approx(one_sided, rel=1e-9)
        assert result.scores[i] == pytest.approx(stats.norm.ppf(one_sided), rel=1e-7, abs=1e-9)


def test_lira_global_variance_is_the_pooled_within_record_variance() -> None:
    references = np.array([[0.0, 10.0, 4.0], [2.0, 12.0, 8.0]])  # record variances 2, 2, 8
    result = lira_offline([1.0, 11.0, 6.0], references)
    assert result.variance == "global"
    assert result.std == pytest.approx([2.0, 2.0, 2.0])  # sqrt((2 + 2 + 8) / 3)
    assert result.scores == pytest.approx([0.0, 0.0, 0.0])
    one = lira_offline([0.0, 1.0], [[1.0, 3.0]])  # K = 1: spread across records
    assert one.std == pytest.approx([1.0, 1.0])
    assert one.scores == pytest.approx([1.0, 2.0])
    with pytest.raises(InvalidInputError, match="at least 2 reference models"):
        lira_offline([0.0], [[1.0]], variance="per_record")


def test_lira_refuses_bad_shapes_with_the_shape() -> None:
    with pytest.raises(InvalidInputError, match=r"Found shape \(2, 2\)"):
        lira_offline([0.0, 1.0, 2.0], np.zeros((2, 2)))
    with pytest.raises(InvalidInputError, match="must be finite"):
        lira_offline([0.0, 1.0], [[0.0, np.nan]])


@given(
    arrays(np.float64, (3, 8), elements=finite),
    arrays(np.float64, 8, elements=finite),
    st.floats(-5, 5),
    st.floats(0.1, 10),
)
def test_lira_is_invariant_to_a_common_affine_map(
    references: np.ndarray, target: np.ndarray, shift: float, scale: float
) -> None:
    assume(references.var(axis=0, ddof=1).mean() > 1e-3)  # a variance to rescale
    base = lira_offline(target, references).scores
    moved = lira_offline(target * scale + shift, references * scale + shift).scores
    np.testing.assert_allclose(moved, base, rtol=1e-6, atol=1e-6)


@given(arrays(np.float64, (4, 6), elements=finite), arrays(np.float64, 6, elements=finite))
def test_lira_score_falls_as_the_target_grows_more_confident(
    references: np.ndarray, target: np.ndarray
) -> None:
    base = lira_offline(target, references).scores
    assert (lira_offline(target + 1.0, references).scores <= base + 1e-12).all()


def _rmia_by_hand(tx, rx, tz, rz, a, gamma):  # type: ignore[no-untyped-def]
    """Pairwise LR(x, z) from probabilities, as the paper writes it."""

    def p(phi):  # type: ignore[no-untyped-def]
        return 1.0 / (1.0 + math.exp(-phi))

    def prior(column):  # type: ignore[no-untyped-def]
        out = sum(p(v) for v in column) / len(column)
        return 0.5 * ((1 + a) * out + (1 - a))

    scores = []
    for i in range(len(tx)):
        ratio_x = p(tx[i]) / prior([row[i] for row in rx])
        wins = 0
        for j in range(len(tz)):
            ratio_z = p(tz[j]) / prior([row[j] for row in rz])
            wins += ratio_x / ratio_z >= gamma
        scores.append(1 - wins / len(tz))
    return scores


@pytest.mark.parametrize(("a", "gamma"), [(0.3, 1.0), (1.0, 1.0), (0.0, 2.0), (0.6, 0.5)])
def test_rmia_matches_the_pairwise_likelihood_ratios(a: float, gamma: float) -> None:
    rng = np.random.default_rng(3)
    tx, rx = rng.normal(2, 2, 12), rng.normal(1, 2, (3, 12))
    tz, rz = rng.normal(1, 2, 25), rng.normal(1, 2, (3, 25))
    result = rmia_offline(tx, rx, tz, rz, a=a, gamma=gamma)
    assert result.scores == pytest.approx(_rmia_by_hand(tx, rx, tz, rz, a, gamma))
    assert result.n_z == 25
    assert result.n_reference == 3


def test_rmia_small_case_by_hand() -> None:
    # One reference model, a = 1: Pr(x) = Pr_OUT(x). Probabilities 0.9/0.5 (x) and
    # 0.5/0.5, 0.2/0.4 (z): ratios 1.8 (x), 1.0 and 0.5 (z): x beats both, score 0.
    logit = lambda p: math.log(p / (1 - p))  # noqa: E731
    result = rmia_offline(
        [logit(0.9), logit(0.5)],
        [[logit(0.5), logit(0.5)]],
        [logit(0.5), logit(0.2)],
        [[logit(0.5), logit(0.4)]],
        a=1.0,
    )
    # second x: ratio 1.0, beats 0.5 and ties 1.0 (≥ γ counts): also 0.
    assert result.scores == pytest.approx([0.0, 0.0])
    assert rmia_offline([logit(0.2)], [[logit(0.5)]], [logit(0.5)], [[logit(0.5)]], a=1.0).scores[
        0
    ] == pytest.approx(1.0)


@given(
    arrays(np.float64, 5, elements=finite),
    arrays(np.float64, (2, 5), elements=finite),
    arrays(np.float64, 7, elements=finite),
    arrays(np.float64, (2, 7), elements=finite),
)
def test_rmia_scores_are_fractions_and_fall_with_the_target_confidence(tx, rx, tz, rz) -> None:  # type: ignore[no-untyped-def]
    base = rmia_offline(tx, rx, tz, rz).scores
    assert ((base >= 0) & (base <= 1)).all()
    assert (rmia_offline(tx + 1.0, rx, tz, rz).scores <= base).all()


def test_rmia_refuses_bad_parameters_naming_the_value() -> None:
    with pytest.raises(InvalidInputError, match=r"a must be in \[0, 1\]. Found 1.5"):
        rmia_offline([0.0], [[0.0]], [0.0], [[0.0]], a=1.5)
    with pytest.raises(InvalidInputError, match="gamma must be in"):
        rmia_offline([0.0], [[0.0]], [0.0], [[0.0]], gamma=0.0)
    with pytest.raises(InvalidInputError, match="Found 1 and 2"):
        rmia_offline([0.0], [[0.0]], [0.0], [[0.0], [1.0]])


def test_attack_auc_against_scipy_mann_whitney() -> None:
    rng = np.random.default_rng(4)
    members, others = rng.normal(-0.5, 1, 300).round(1), rng.normal(0, 1, 400).round(1)
    u = stats.mannwhitneyu(-members, -others).statistic  # ties count one half
    assert attack_auc(members, others) == pytest.approx(u / (300 * 400), rel=1e-12)
    assert attack_auc([0.0], [1.0]) == 1.0
    assert attack_auc([1.0], [1.0]) == 0.5
