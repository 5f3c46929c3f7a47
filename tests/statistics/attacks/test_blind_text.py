"""The blind baseline for text (``epsstar/statistics/attacks/blind_text.py``): its scores
against the same model assembled another way (scikit-learn's ``FeatureUnion`` and
``cross_val_predict``), its cross-fitting, and its errors."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from sklearn.feature_extraction.text import HashingVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import FeatureUnion, make_pipeline

from epsstar.exceptions import InsufficientDataError, InvalidInputError
from epsstar.statistics.attacks.blind_text import (
    BLIND_FOLDS,
    CLASSIFIER,
    BlindScores,
    blind_text_scores,
)

_WORDS = [
    "river",
    "stone",
    "cloud",
    "apple",
    "market",
    "winter",
    "signal",
    "garden",
    "copper",
    "lantern",
]


def _texts(rng: np.random.Generator, n: int, extra: str) -> list[str]:
    """Random sentences of the shared words; ``extra`` words mark one side."""
    pool = [*_WORDS, *extra.split()]
    return [" ".join(rng.choice(pool, size=int(rng.integers(4, 9)))) for _ in range(n)]


def _peer(texts: list[str], labels: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """The module's description (hashed word 1-2-grams and char_wb 3-5-grams, 2^20 columns
    each, l2 rows; balanced liblinear logistic regression, C = 1; stratified shuffled folds)
    written as one scikit-learn pipeline."""
    features = FeatureUnion(
        [
            (
                "words",
                HashingVectorizer(n_features=2**20, ngram_range=(1, 2), alternate_sign=False),
            ),
            (
                "characters",
                HashingVectorizer(
                    n_features=2**20, analyzer="char_wb", ngram_range=(3, 5), alternate_sign=False
                ),
            ),
        ]
    )
    model = make_pipeline(
        features, LogisticRegression(class_weight="balanced", solver="liblinear", max_iter=1000)
    )
    cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    scores = cross_val_predict(model, texts, labels, cv=cv, method="decision_function")
    return -np.asarray(scores)


def test_errors_and_the_default_folds() -> None:
    assert BLIND_FOLDS == 5
    assert inspect.signature(blind_text_scores).parameters["folds"].default == BLIND_FOLDS
    with pytest.raises(InvalidInputError, match=r"^folds must be at least 2\. Found 1\.$"):
        blind_text_scores(["a b"] * 5, ["c d"] * 5, folds=1)
    with pytest.raises(
        InsufficientDataError,
        match=r"^the blind baseline needs at least 5 records on each side\. Found 4 and 6\.$",
    ):
        blind_text_scores(["a b"] * 4, ["c d"] * 6)
    with pytest.raises(InsufficientDataError, match=r"at least 3 records.*Found 3 and 2\.$"):
        blind_text_scores(["a b"] * 3, ["c d"] * 2, folds=3)


def test_scores_match_a_scikit_learn_pipeline() -> None:
    # Two folds and exactly two non-members (the fewest allowed); a fit on 2^21 hashed
    # columns takes seconds on a busy machine, so this is the one test that fits.
    folds, seed = 2, 7
    rng = np.random.default_rng(seed)
    members = [t + " harbour" for t in _texts(rng, 9, "")]
    nonmembers = _texts(rng, 2, "desert")
    found = blind_text_scores(members, nonmembers, folds=folds, seed=seed)
    assert isinstance(found, BlindScores)
    labels = np.r_[np.ones(9, int), np.zeros(2, int)]
    expected = _peer([*members, *nonmembers], labels, folds, seed)
    # the same solver on the same sparse matrix: only the order of float sums may differ
    np.testing.assert_allclose(found.members, expected[:9], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(found.nonmembers, expected[9:], rtol=1e-9, atol=1e-12)
    assert found.folds == folds
    assert found.classifier == CLASSIFIER
    # oriented like a loss: the members (all with "harbour") score lower
    assert found.members.mean() < found.nonmembers.mean()
