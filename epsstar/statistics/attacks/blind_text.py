"""A blind baseline for text: tell training from population records without the model.

Das et al. 2024 ("Blind Baselines Beat Membership Inference Attacks for Foundation Models")
showed that on several public text benchmarks a classifier that never sees the model tells
the members from the non-members better than the published attacks: the two sides differ
(dates, topics, sources), and any score that picks this up reads as a leak. An audit whose
population is not a sample of the training distribution measures that difference, not
memorisation. :func:`blind_text_scores` trains a bag-of-n-grams classifier, as Das et al. do,
to tell the two sides apart, cross-fitted: the records are split into ``folds`` stratified
folds and every record is scored by the classifier trained on the other folds, so no record
is scored by a classifier that saw it. The scores are oriented like a loss (minus the
classifier's log-odds of "training record"), so Epsilon*, its held-out lower bound and the
AUC follow as for any attack; a lower bound above 0 means the premise fails.

The features are hashed word 1-2-grams and character 3-5-grams within word boundaries
(scikit-learn's ``HashingVectorizer``, 2^20 columns, l2-normalised; hashing keeps memory fixed
whatever the vocabulary), the classifier an l2-regularised logistic regression with balanced
class weights (``liblinear``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from epsstar.exceptions import InsufficientDataError, InvalidInputError
from epsstar.statistics._validation import FloatArray

__all__ = ["BLIND_FOLDS", "CLASSIFIER", "BlindScores", "blind_text_scores"]

BLIND_FOLDS: Final = 5
CLASSIFIER: Final = (
    "logistic regression on hashed word 1-2-grams and character 3-5-grams (2^20 features)"
)


@dataclass(frozen=True, slots=True)
class BlindScores:
    """Out-of-fold scores of the members and the non-members (lower: more member-like)."""

    members: FloatArray = field(repr=False)
    nonmembers: FloatArray = field(repr=False)
    folds: int
    classifier: str = CLASSIFIER


def _features(texts: Sequence[str]) -> Any:
    from scipy.sparse import hstack
    from sklearn.feature_extraction.text import HashingVectorizer

    words = HashingVectorizer(n_features=1 << 20, ngram_range=(1, 2), alternate_sign=False)
    characters = HashingVectorizer(
        n_features=1 << 20, analyzer="char_wb", ngram_range=(3, 5), alternate_sign=False
    )
    return hstack([words.transform(texts), characters.transform(texts)]).tocsr()


def blind_text_scores(
    members: Sequence[str],
    nonmembers: Sequence[str],
    *,
    folds: int = BLIND_FOLDS,
    seed: int = 0,
) -> BlindScores:
    """Cross-fitted scores of a bag-of-n-grams classifier (see the module docstring)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    if folds < 2:
        raise InvalidInputError(f"folds must be at least 2. Found {folds}.")
    if min(len(members), len(nonmembers)) < folds:
        raise InsufficientDataError(
            f"the blind baseline needs at least {folds} records on each side. Found "
            f"{len(members)} and {len(nonmembers)}."
        )
    texts = [*members, *nonmembers]
    labels = np.concatenate([np.ones(len(members), int), np.zeros(len(nonmembers), int)])
    matrix = _features(texts)
    scores = np.empty(labels.size)
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    for fitted, scored in splitter.split(np.zeros(labels.size), labels):
        classifier = LogisticRegression(
            C=1.0, class_weight="balanced", solver="liblinear", max_iter=1000
        )
        classifier.fit(matrix[fitted], labels[fitted])
        scores[scored] = -classifier.decision_function(matrix[scored])
    return BlindScores(scores[: len(members)], scores[len(members) :], folds)
