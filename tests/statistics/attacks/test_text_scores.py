"""The per-sequence scores of the text attacks (``epsstar/statistics/attacks/text_scores.py``),
checked against plain re-computations: sorting in Python, SciPy's log-softmax and the central
variance, closed forms of small distributions and hand-computed values."""

from __future__ import annotations

import heapq
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import log_softmax

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.attacks.text_scores import (
    DEFAULT_MIN_K,
    MIN_SIGMA,
    lowercase_ratio,
    mean_token_loss,
    min_k_count,
    min_k_percent,
    min_k_plus_plus,
    reference_ratio,
    standardised_log_probs,
    vocabulary_moments,
    zlib_ratio,
)

rows = st.lists(
    st.lists(st.floats(-30, 0, allow_nan=False), min_size=1, max_size=20), min_size=1, max_size=6
)


def _padded(values: list[list[float]]) -> tuple[np.ndarray, np.ndarray]:
    width = max(len(v) for v in values)
    array = np.full((len(values), width), 123.0)  # padding that would show if read
    mask = np.zeros_like(array, dtype=bool)
    for i, v in enumerate(values):
        array[i, : len(v)] = v
        mask[i, : len(v)] = True
    return array, mask


@given(rows, st.floats(0.01, 1.0))
def test_min_k_is_the_mean_of_the_least_likely_tokens(values: list[list[float]], k: float) -> None:
    array, mask = _padded(values)
    found = min_k_percent(array, mask, k)
    for row, v in zip(found, values, strict=True):
        taken = max(1, math.floor(k * len(v) + 1e-9))
        # float sums in another order: 1e-9 relative protects only against rounding
        assert row == pytest.approx(-sum(heapq.nsmallest(taken, v)) / taken, rel=1e-9, abs=1e-12)


@given(rows)
def test_the_mean_token_loss_reads_only_real_tokens(values: list[list[float]]) -> None:
    array, mask = _padded(values)
    expected = [-sum(v) / len(v) for v in values]
    # rounding of a sum of at most 20 terms
    assert mean_token_loss(array, mask) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_min_k_plus_plus_standardises_by_scipy_s_moments() -> None:
    rng = np.random.default_rng(0)
    log_p = log_softmax(rng.normal(scale=3, size=(3, 7, 50)), axis=-1)
    targets = rng.integers(0, 50, (3, 7))
    chosen = np.take_along_axis(log_p, targets[..., None], axis=-1)[..., 0]
    p = np.exp(log_p)
    mu = (p * log_p).sum(-1)
    # the central second moment, not E[x^2] - mu^2 as the module computes it
    sigma = np.sqrt((p * (log_p - mu[..., None]) ** 2).sum(-1))
    ours_mu, ours_sigma = vocabulary_moments(log_p)
    # two formulas for one variance in float64: rounding only
    np.testing.assert_allclose(ours_mu, mu, rtol=1e-10)
    np.testing.assert_allclose(ours_sigma, sigma, rtol=1e-8)
    z = (chosen - mu) / sigma
    mask = np.ones_like(z, dtype=bool)
    expected = [-np.sort(row)[: max(1, math.floor(0.3 * 7))].mean() for row in z]
    found = min_k_plus_plus(chosen, mu, sigma, mask, 0.3)
    np.testing.assert_allclose(found, expected, rtol=1e-8)


def test_min_k_plus_plus_by_hand_ignores_padding_and_uses_the_default_k() -> None:
    # Record 0: z = (-1 - -2)/1, (-5 - -2)/2, (-3 - -2)/0.5, (-2 - -2)/1, (-4 - -1)/1
    #         = 1, -1.5, -2, 0, -3; ⌊0.2·5⌋ = 1 token: the smallest, -3.
    # Record 1: two tokens z = (−2 − −1)/1 = −1 and (−1 − −3)/2 = 1; max(1, ⌊0.4⌋) = 1: −1.
    log_probs = np.array([[-1.0, -5.0, -3.0, -2.0, -4.0], [-2.0, -1.0, -99.0, -99.0, -99.0]])
    mu = np.array([[-2.0, -2.0, -2.0, -2.0, -1.0], [-1.0, -3.0, 0.0, 0.0, 0.0]])
    sigma = np.array([[1.0, 2.0, 0.5, 1.0, 1.0], [1.0, 2.0, 1.0, 1.0, 1.0]])
    mask = np.array([[True] * 5, [True, True, False, False, False]])
    assert DEFAULT_MIN_K == 0.2
    np.testing.assert_array_equal(min_k_plus_plus(log_probs, mu, sigma, mask), [3.0, 1.0])
    # k = 0.4: ⌊2⌋ = 2 smallest of record 0 (−3, −2); record 1 still 1 token (⌊0.8⌋ → 1)
    np.testing.assert_array_equal(min_k_plus_plus(log_probs, mu, sigma, mask, 0.4), [2.5, 1.0])


def test_min_k_by_hand() -> None:
    log_probs = np.array([[-1.0, -4.0, -2.0, -8.0, -3.0, -0.5, -6.0, -7.0, -5.0, -0.1]])
    mask = np.ones_like(log_probs, dtype=bool)
    # ⌊0.2·10⌋ = 2 smallest: −8, −7
    np.testing.assert_array_equal(min_k_percent(log_probs, mask), [7.5])
    np.testing.assert_array_equal(min_k_percent(log_probs, mask, 1.0), [3.66])
    # one record may come as a 1-D row
    np.testing.assert_array_equal(min_k_percent(log_probs[0], mask[0], 0.3), [7.0])
    np.testing.assert_array_equal(mean_token_loss(log_probs[0], mask[0]), [3.66])


@pytest.mark.parametrize(
    ("n", "k", "expected"),
    [
        (1, 0.2, 1),
        (4, 0.2, 1),  # ⌊0.8⌋ = 0 → at least one token
        (5, 0.2, 1),
        (10, 0.2, 2),
        (14, 0.2, 2),
        (15, 0.2, 3),
        (7, 1.0, 7),
        (100, 0.57, 57),  # 0.57·100 = 56.999999999999993 in floating point: ⌊·⌋ would give 56
        (10, 0.3, 3),
        (0, 0.5, 1),
    ],
)
def test_min_k_count(n: int, k: float, expected: int) -> None:
    found = min_k_count([n], k)
    assert found.dtype == np.int64
    assert found.tolist() == [expected]


@pytest.mark.parametrize("k", [0.0, -0.1, 1.0000001, 2.0, math.nan])
def test_min_k_refuses_a_share_outside_0_1(k: float) -> None:
    with pytest.raises(InvalidInputError, match="^k must be in"):
        min_k_count([10], k)
    with pytest.raises(InvalidInputError, match="^k must be in"):
        min_k_percent([[-1.0, -2.0]], [[True, True]], k)


def test_padded_inputs_are_checked() -> None:
    with pytest.raises(
        InvalidInputError,
        match=r"^log_probs must be a \(records, positions\).*"
        r"Found shapes \(2, 3\) and \(2, 2\)\.$",
    ):
        mean_token_loss(np.zeros((2, 3)), np.ones((2, 2), bool))
    with pytest.raises(InvalidInputError, match=r"Found shapes \(2, 2, 2\) and \(2, 2, 2\)\.$"):
        mean_token_loss(np.zeros((2, 2, 2)), np.ones((2, 2, 2), bool))
    with pytest.raises(InvalidInputError, match=r"Found none in record 1\.$"):
        min_k_percent([[-1.0, -2.0], [-1.0, -2.0], [-3.0, 0.0]], [[1, 0], [0, 0], [0, 0]])
    with pytest.raises(
        InvalidInputError,
        match=r"^log_probs must be finite\. Found nan in "
        r"record 1, position 2\.$",
    ):
        mean_token_loss([[0.0, -1.0, -2.0], [-1.0, -1.0, math.nan]], np.ones((2, 3), bool))
    with pytest.raises(InvalidInputError, match=r"Found -inf in record 0, position 1\.$"):
        min_k_percent([[0.0, -math.inf]], [[True, True]])
    with pytest.raises(InvalidInputError, match=r"^standardised log_probs must be finite"):
        min_k_plus_plus([[0.0, -1.0]], [[0.0, math.inf]], [[1.0, 1.0]], [[True, True]])
    with pytest.raises(InvalidInputError, match=r"^standardised log_probs: every record"):
        min_k_plus_plus([[0.0, -1.0]], [[0.0, 0.0]], [[1.0, 1.0]], [[False, False]])
    # non-finite values outside the mask are padding, not data
    padded = [[-2.0, math.nan, -math.inf]]
    assert mean_token_loss(padded, [[True, False, False]]).tolist() == [2.0]
    assert min_k_percent(padded, [[True, False, False]]).tolist() == [2.0]


def test_standardised_log_probs_floors_sigma() -> None:
    assert MIN_SIGMA == 1e-6
    z = standardised_log_probs(
        [-1.0, -1.0, -3.0, -3.0], [-2.0, -1.0, -2.0, -2.0], [0.5, 0.0, 1e-7, 2e-6]
    )
    # (−1+2)/0.5; (−1+1)/1e-6; (−3+2)/1e-6 (σ below the floor); (−3+2)/2e-6 (σ above it)
    np.testing.assert_allclose(z, [2.0, 0.0, -1e6, -5e5], rtol=1e-15)


def test_vocabulary_moments_of_small_distributions_in_closed_form() -> None:
    # a point mass: μ = 0, σ = 0, with 0·log 0 = 0 (no NaN from −inf · 0)
    mu, sigma = vocabulary_moments([[0.0, -math.inf, -math.inf]])
    assert mu.tolist() == [0.0]
    assert sigma.tolist() == [0.0]
    # uniform over V: μ = −log V and σ = 0 (a tiny negative variance from rounding → 0)
    for v in (3, 7, 50_000):
        mu, sigma = vocabulary_moments(np.full(v, -math.log(v)))
        assert float(mu) == pytest.approx(-math.log(v), rel=1e-12)  # a sum of v equal terms
        assert float(sigma) < 1e-6
        assert not math.isnan(float(sigma))
    # two points p, 1 − p: μ = p log p + (1−p) log(1−p), σ = √(p(1−p))·|log p − log(1−p)|
    for p in (0.5, 0.1, 0.999):
        mu, sigma = vocabulary_moments([math.log(p), math.log1p(-p)])
        assert float(mu) == pytest.approx(p * math.log(p) + (1 - p) * math.log1p(-p), rel=1e-12)
        expected = math.sqrt(p * (1 - p)) * abs(math.log(p) - math.log1p(-p))
        # E[x²] − μ² loses digits to cancellation: 1e-7 absolute covers it, far below σ
        assert float(sigma) == pytest.approx(expected, abs=1e-7)
    # the last axis is the vocabulary; the others are kept
    mu, sigma = vocabulary_moments(np.log(np.full((2, 3, 4), 0.25)))
    assert mu.shape == sigma.shape == (2, 3)


def test_the_ratios_by_hand() -> None:
    np.testing.assert_array_equal(zlib_ratio([2.0, 3.0], [4, 6]), [0.5, 0.5])
    np.testing.assert_array_equal(lowercase_ratio([[2.0, 3.0]], [8.0, 2.0]), [0.25, 1.5])
    np.testing.assert_array_equal(reference_ratio([2.0, 3.0], [1.5, 4.0]), [0.5, -1.0])
    # K = 3 reference models: the mean of theirs
    references = [[1.0, 1.0], [2.0, 4.0], [6.0, 1.0]]
    np.testing.assert_array_equal(reference_ratio([2.0, 3.0], references), [-1.0, 1.0])


def test_the_ratios_refuse_bad_values() -> None:
    with pytest.raises(
        InvalidInputError,
        match=r"^zlib_bytes must be positive\. Found 0\.0 at "
        r"index 1\.$",
    ):
        zlib_ratio([1.0, 2.0], [3, 0])
    with pytest.raises(
        InvalidInputError,
        match=r"^lowercase_loss must be positive\. Found -1\.0 at"
        r" index 0\.$",
    ):
        lowercase_ratio([1.0], [-1.0])
    with pytest.raises(InvalidInputError, match=r"^loss must be finite\. Found inf at index 1\.$"):
        zlib_ratio([1.0, math.inf], [3, 3])
    with pytest.raises(InvalidInputError, match=r"^lowercase_loss must be finite\. Found nan"):
        lowercase_ratio([1.0], [math.nan])
    with pytest.raises(
        InvalidInputError,
        match=r"^reference_losses must be \(models, 2\)\. "
        r"Found shape \(1, 3\)\.$",
    ):
        reference_ratio([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(InvalidInputError, match=r"Found shape \(1, 1, 2\)\.$"):
        reference_ratio([1.0, 2.0], [[[1.0, 2.0]]])
    with pytest.raises(
        InvalidInputError,
        match=r"^reference_losses must be finite\. Found nan at "
        r"index 3\.$",
    ):
        reference_ratio([1.0, 2.0], [[1.0, 2.0], [3.0, math.nan]])
    with pytest.raises(InvalidInputError, match=r"^loss must be finite"):
        reference_ratio([math.nan, 2.0], [1.0, 2.0])


def test_float32_inputs_are_read_in_float64() -> None:
    # the mean of float32 references in float32 would be off by ~1e-8
    references = np.array([[0.1, 0.2], [0.2, 0.3], [0.7, 0.1]], dtype=np.float32)
    expected = 1.0 - references.astype(np.float64).mean(axis=0)
    np.testing.assert_array_equal(reference_ratio([1.0, 1.0], references), expected)
    log_p = np.log(np.array([[0.3, 0.7], [0.1, 0.9]], dtype=np.float32))
    mu, sigma = vocabulary_moments(log_p)
    assert mu.dtype == sigma.dtype == np.float64


def test_positive_denominators_below_one_are_accepted() -> None:
    np.testing.assert_array_equal(lowercase_ratio([1.0], [0.5]), [2.0])
    np.testing.assert_array_equal(zlib_ratio([1.0], [0.25]), [4.0])
    with pytest.raises(InvalidInputError, match=r"^loss must be finite\. Found nan at index 0\.$"):
        lowercase_ratio([math.nan], [1.0])
