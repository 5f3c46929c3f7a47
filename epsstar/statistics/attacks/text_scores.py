"""Per-sequence membership scores of a causal language model, from token log-probabilities.

A causal LM gives, at every position ``t`` of a record, a distribution ``p_t`` over its
vocabulary for the next token; ``log p_t(x_t)`` is the log-probability of the token that
follows. The attacks of the text-membership literature turn these into one score per
record. Every score here is oriented like a loss (lower: more member-like), so the
estimators of Epsilon* run on it unchanged:

* **mean token loss** ``L = −(1/n) Σ_t log p_t(x_t)`` (Yeom et al. 2018's loss attack; the
  log-perplexity);
* **zlib ratio** ``L / z`` with ``z`` the length in bytes of the record's UTF-8 text
  compressed by zlib: Carlini et al. 2021 ("Extracting Training Data from Large Language
  Models", USENIX Security, §5.2) calibrate the model's perplexity by a model-free measure
  of how predictable the text is;
* **Min-K%** ``−mean of the max(1, ⌊k n⌋) smallest log p_t(x_t)`` (Shi et al. 2024, "Detecting
  Pretraining Data from Large Language Models", ICLR): a non-member has a few very
  unlikely tokens, which the mean over all tokens dilutes;
* **Min-K%++** the same over ``z_t = (log p_t(x_t) − μ_t) / σ_t`` with ``μ_t = E_{v∼p_t}
  log p_t(v)`` and ``σ_t² = E_{v∼p_t}(log p_t(v))² − μ_t²`` (Zhang et al. 2024, "Min-K%++:
  Improved Baseline for Detecting Pre-Training Data from Large Language Models", ICLR
  2025, eq. 4): each token's log-probability standardised against the model's own
  distribution at that position, which :func:`vocabulary_moments` computes;
* **reference-model ratio** ``L − L_ref``: the log of the per-token likelihood ratio of a
  reference model to the target (Carlini et al. 2021 §5.2, "comparing to other neural
  language models"; with several reference models, ``L_ref`` is the mean of theirs). A
  reference model that never saw the records, such as the base model before fine-tuning,
  removes what makes a text easy for any model;
* **lowercase ratio** ``L / L_lower``: the target's loss on the record over its loss on the
  record in lower case (Carlini et al. 2021 §5.2).

The number of tokens taken by Min-K% is ``max(1, ⌊k n⌋)`` (the reference code of Min-K%++
takes ``⌊k n⌋``, which is 0 for short records). Records are rows of a padded ``(rows, T)``
array with a boolean ``mask`` of the positions that hold a token's log-probability, so
that one call scores a whole batch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import FloatArray, check_in_range

__all__ = [
    "DEFAULT_MIN_K",
    "MIN_SIGMA",
    "lowercase_ratio",
    "mean_token_loss",
    "min_k_count",
    "min_k_percent",
    "min_k_plus_plus",
    "reference_ratio",
    "standardised_log_probs",
    "vocabulary_moments",
    "zlib_ratio",
]

#: The share of tokens Min-K% and Min-K%++ average: 20 %, the value both papers recommend.
DEFAULT_MIN_K = 0.2
#: The smallest σ_t Min-K%++ divides by: a position where the model puts all its mass on one
#: token has σ_t = 0 and z_t = 0/0; there the token is either that one (z_t = 0) or has
#: probability 0, and the floor keeps z_t finite and very negative.
MIN_SIGMA = 1e-6


def _padded(name: str, values: ArrayLike, mask: ArrayLike) -> tuple[FloatArray, NDArray[Any]]:
    """``values`` as a 2-D float64 array and ``mask`` as booleans of its shape, every row
    with at least one masked-in finite value."""
    array = np.asarray(values, dtype=np.float64)
    keep = np.asarray(mask, dtype=bool)
    if array.ndim == 1:
        array, keep = array[None, :], keep.reshape(1, -1)
    if array.ndim != 2 or keep.shape != array.shape:
        raise InvalidInputError(
            f"{name} must be a (records, positions) array with a mask of the same shape. "
            f"Found shapes {array.shape} and {keep.shape}."
        )
    empty = ~keep.any(axis=1)
    if empty.any():
        raise InvalidInputError(
            f"{name}: every record needs at least one scored token. Found none in record "
            f"{int(np.flatnonzero(empty)[0])}."
        )
    bad = keep & ~np.isfinite(array)
    if bad.any():
        row, column = (int(i) for i in np.argwhere(bad)[0])
        raise InvalidInputError(
            f"{name} must be finite. Found {array[row, column]} in record {row}, position {column}."
        )
    return array, keep


def mean_token_loss(log_probs: ArrayLike, mask: ArrayLike) -> FloatArray:
    """``−(1/n) Σ_t log p_t(x_t)`` of each record (its ``n`` masked-in positions)."""
    values, keep = _padded("log_probs", log_probs, mask)
    total = np.where(keep, values, 0.0).sum(axis=1)
    result: FloatArray = -total / keep.sum(axis=1)
    return result


def min_k_count(n_tokens: ArrayLike, k: float) -> NDArray[np.int64]:
    """How many of a record's ``n`` tokens Min-K% averages: ``max(1, ⌊k n⌋)``."""
    check_in_range("k", k, 0.0, 1.0, high_inclusive=True)
    counts = np.asarray(n_tokens, dtype=np.int64)
    taken: NDArray[np.int64] = np.maximum(1, np.floor(k * counts + 1e-9).astype(np.int64))
    return taken


def _lowest_mean(values: FloatArray, keep: NDArray[Any], k: float) -> FloatArray:
    """The mean of each row's ``max(1, ⌊k n⌋)`` smallest masked-in values."""
    ordered = np.sort(np.where(keep, values, np.inf), axis=1)
    counts = min_k_count(keep.sum(axis=1), k)
    taken = np.arange(values.shape[1])[None, :] < counts[:, None]
    result: FloatArray = np.where(taken, ordered, 0.0).sum(axis=1) / counts
    return result


def min_k_percent(log_probs: ArrayLike, mask: ArrayLike, k: float = DEFAULT_MIN_K) -> FloatArray:
    """Min-K% as a loss: minus the mean of each record's ``max(1, ⌊k n⌋)`` smallest token
    log-probabilities."""
    values, keep = _padded("log_probs", log_probs, mask)
    return -_lowest_mean(values, keep, k)


def standardised_log_probs(log_probs: ArrayLike, mu: ArrayLike, sigma: ArrayLike) -> FloatArray:
    """``z_t = (log p_t(x_t) − μ_t) / max(σ_t, MIN_SIGMA)``, elementwise."""
    values = np.asarray(log_probs, dtype=np.float64)
    spread = np.maximum(np.asarray(sigma, dtype=np.float64), MIN_SIGMA)
    result: FloatArray = (values - np.asarray(mu, dtype=np.float64)) / spread
    return result


def min_k_plus_plus(
    log_probs: ArrayLike,
    mu: ArrayLike,
    sigma: ArrayLike,
    mask: ArrayLike,
    k: float = DEFAULT_MIN_K,
) -> FloatArray:
    """Min-K%++ as a loss: minus the mean of each record's ``max(1, ⌊k n⌋)`` smallest
    standardised log-probabilities :func:`standardised_log_probs`."""
    z = standardised_log_probs(log_probs, mu, sigma)
    values, keep = _padded("standardised log_probs", np.where(mask, z, 0.0), mask)
    return -_lowest_mean(values, keep, k)


def vocabulary_moments(log_distribution: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """``(μ, σ)`` of ``log p(v)`` under ``v ∼ p`` over the last axis of a log-distribution
    (log-softmax outputs): ``μ = Σ_v p(v) log p(v)``, ``σ = √(Σ_v p(v) log² p(v) − μ²)``
    (a negative variance from rounding is taken as 0)."""
    logp = np.asarray(log_distribution, dtype=np.float64)
    p = np.exp(logp)
    finite = np.where(p > 0.0, logp, 0.0)  # 0·log 0 = 0
    mu: FloatArray = (p * finite).sum(axis=-1)
    variance = (p * finite * finite).sum(axis=-1) - mu * mu
    sigma: FloatArray = np.sqrt(np.maximum(variance, 0.0))
    return mu, sigma


def _vector(name: str, values: ArrayLike) -> FloatArray:
    array = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(array)):
        index = int(np.flatnonzero(~np.isfinite(array))[0])
        raise InvalidInputError(f"{name} must be finite. Found {array[index]} at index {index}.")
    return array


def _positive(name: str, values: ArrayLike) -> FloatArray:
    array = _vector(name, values)
    if (array <= 0).any():
        index = int(np.flatnonzero(array <= 0)[0])
        raise InvalidInputError(f"{name} must be positive. Found {array[index]} at index {index}.")
    return array


def zlib_ratio(loss: ArrayLike, zlib_bytes: ArrayLike) -> FloatArray:
    """``L / z``: the mean token loss over the zlib-compressed length of the text in bytes."""
    result: FloatArray = _vector("loss", loss) / _positive("zlib_bytes", zlib_bytes)
    return result


def lowercase_ratio(loss: ArrayLike, lowercase_loss: ArrayLike) -> FloatArray:
    """``L / L_lower``: the loss on the record over the loss on its lower-case text."""
    result: FloatArray = _vector("loss", loss) / _positive("lowercase_loss", lowercase_loss)
    return result


def reference_ratio(loss: ArrayLike, reference_losses: ArrayLike) -> FloatArray:
    """``L − mean_j L_ref,j``: ``reference_losses`` is ``(K, n)`` (or ``(n,)`` for one model)."""
    target = _vector("loss", loss)
    references = np.asarray(reference_losses, dtype=np.float64)
    if references.ndim == 1:
        references = references[None, :]
    if references.ndim != 2 or references.shape[1] != target.size:
        raise InvalidInputError(
            f"reference_losses must be (models, {target.size}). Found shape {references.shape}."
        )
    _vector("reference_losses", references)
    result: FloatArray = target - references.mean(axis=0)
    return result
