"""AUROC by ranks agrees with scikit-learn's roc_auc_score, ties included."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import softmax
from sklearn.metrics import roc_auc_score

from epsstar.statistics.utility import auroc


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(4, 400),
    n_classes=st.sampled_from([2, 3, 7]),
    tie_decimals=st.sampled_from([None, 0, 1]),
    dtype=st.sampled_from([np.float64, np.float32]),  # float32: the narrowed sort
)
def test_auroc_equals_scikit_learn(
    seed: int, rows: int, n_classes: int, tie_decimals: int | None, dtype: type[np.floating[Any]]
) -> None:
    rng = np.random.default_rng(seed)
    labels = np.concatenate([np.arange(n_classes), rng.integers(0, n_classes, rows)])
    raw = rng.normal(size=(labels.size, n_classes)) + np.eye(n_classes)[labels]
    if tie_decimals is not None:
        raw = np.round(raw, tie_decimals)  # many equal scores
    if n_classes == 2:
        scores = raw[:, 1]
        expected = roc_auc_score(labels, scores)
    else:
        scores = (
            np.round(softmax(raw, axis=1), 2) if tie_decimals is not None else softmax(raw, axis=1)
        )
        scores = scores / scores.sum(axis=1, keepdims=True)
        expected = roc_auc_score(labels, scores, multi_class="ovr", labels=np.arange(n_classes))
    if dtype is np.float32:
        scores = scores.astype(np.float32)
        expected = roc_auc_score(
            labels,
            scores.astype(np.float64),
            **({} if n_classes == 2 else {"multi_class": "ovr", "labels": np.arange(n_classes)}),
        )
    value, _ = auroc(labels, scores, n_classes)
    assert value == pytest.approx(expected, rel=0, abs=1e-12)


def test_auroc_of_known_rankings() -> None:
    labels = np.array([0, 0, 1, 1])
    assert auroc(labels, np.array([0.1, 0.2, 0.3, 0.4]), 2) == (1.0, None)
    assert auroc(labels, np.array([0.4, 0.3, 0.2, 0.1]), 2) == (0.0, None)
    assert auroc(labels, np.array([0.5, 0.5, 0.5, 0.5]), 2) == (0.5, None)
    # one of the four pairs is tied, one is won: (1 + 0.5) / 4
    assert auroc(labels, np.array([0.2, 0.3, 0.3, 0.1]), 2) == (0.375, None)


def test_auroc_is_undefined_without_every_class() -> None:
    assert auroc(np.zeros(5, dtype=int), np.linspace(0, 1, 5), 2) == (
        None,
        "only one class present",
    )
    scores = np.full((4, 3), 1 / 3)
    assert auroc(np.array([0, 1, 0, 1]), scores, 3) == (None, "not every class is present")
    labels = np.array([0, 1, 2, 0, 1, 2])
    value, note = auroc(labels, np.eye(3)[labels], 3)
    assert (value, note) == (1.0, "one-vs-rest, macro average")


def test_scores_that_float32_would_tie_keep_their_order() -> None:
    # 1 and 1 + 1e-12 are one float32: sorting narrowed values would read a tie (0.5)
    labels = np.array([0, 1, 0, 1])
    scores = np.array([1.0, 1.0 + 1e-12, 0.5, 1.0 + 2e-12])
    assert auroc(labels, scores, 2) == (1.0, None)
    multi = np.stack([1 - scores, scores, np.zeros(4)], axis=1)
    value, _ = auroc(np.array([0, 1, 2, 1]), multi + np.array([0, 0, 1e-12]), 3)
    assert value == pytest.approx(
        roc_auc_score([0, 1, 2, 1], multi + np.array([0, 0, 1e-12]), multi_class="ovr"),
        rel=0,
        abs=1e-12,
    )


@pytest.mark.parametrize("n_classes", [2, 5])
def test_float32_scores_read_the_same_widened_or_not(n_classes: int) -> None:
    rng = np.random.default_rng(3)
    labels = np.concatenate([np.arange(n_classes), rng.integers(0, n_classes, 3_000)])
    raw = softmax(rng.normal(size=(labels.size, n_classes)), axis=1).astype(np.float32)
    scores = raw[:, 1] if n_classes == 2 else raw
    narrow, _ = auroc(labels, scores, n_classes)
    wide, _ = auroc(labels, scores.astype(np.float64), n_classes)
    assert narrow == wide
