"""skops files of ordinary scikit-learn estimators load without trust; crafted trees and
unknown types do not (:mod:`epsstar.loaders.sklearn.skops_types`)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import make_classification
from sklearn.ensemble import (
    AdaBoostClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
    StackingClassifier,
)
from sklearn.linear_model import LogisticRegression
from sklearn.naive_bayes import GaussianNB
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import KBinsDiscretizer, StandardScaler
from sklearn.svm import SVC, LinearSVC

from epsstar.audit.model.features import Features
from epsstar.exceptions import InvalidInputError
from epsstar.loaders.sklearn import SklearnLoader
from epsstar.loaders.sklearn.skops_types.reviewed import REVIEWED_TYPES
from tests.conftest import audit_files

X, Y = make_classification(240, 6, n_informative=4, random_state=0)
X3, Y3 = make_classification(240, 6, n_informative=4, n_classes=3, random_state=1)


def _categorical_frame() -> tuple[pd.DataFrame, np.ndarray]:
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(6)])
    frame["colour"] = pd.Categorical(np.where(X[:, 0] > 0, "red", "blue"))
    return frame, Y


ESTIMATORS: dict[str, Callable[[], tuple[Any, Any, Any]]] = {
    "histogram boosting": lambda: (HistGradientBoostingClassifier(max_iter=8), X, Y),
    "histogram boosting, 3 classes": lambda: (HistGradientBoostingClassifier(max_iter=8), X3, Y3),
    "histogram boosting, categories": lambda: (
        HistGradientBoostingClassifier(max_iter=8, categorical_features="from_dtype"),
        *_categorical_frame(),
    ),
    "isotonic calibration": lambda: (CalibratedClassifierCV(LinearSVC(), method="isotonic"), X, Y),
    "sigmoid calibration in a pipeline": lambda: (
        make_pipeline(StandardScaler(), CalibratedClassifierCV(LinearSVC(), method="sigmoid")),
        X,
        Y,
    ),
    "temperature calibration": lambda: (
        CalibratedClassifierCV(LogisticRegression(), method="temperature"),
        X3,
        Y3,
    ),
    "MLP, adam": lambda: (MLPClassifier((4,), max_iter=30, random_state=0), X, Y),
    "MLP, sgd": lambda: (MLPClassifier((4,), solver="sgd", max_iter=30, random_state=0), X, Y),
    "SVC with probabilities": lambda: (SVC(probability=True, random_state=0), X, Y),
    "dtype in a pipeline": lambda: (
        make_pipeline(
            KBinsDiscretizer(encode="ordinal", quantile_method="averaged_inverted_cdf"),
            LogisticRegression(),
        ),
        X,
        Y,
    ),
    "random forest": lambda: (RandomForestClassifier(8, random_state=0), X, Y),
    "gradient boosting": lambda: (GradientBoostingClassifier(n_estimators=8), X, Y),
    "AdaBoost": lambda: (AdaBoostClassifier(n_estimators=4, random_state=0), X, Y),
    "stacking": lambda: (
        StackingClassifier([("lr", LogisticRegression()), ("nb", GaussianNB())]),
        X,
        Y,
    ),
}


def fitted(kind: str) -> tuple[Any, Any]:
    estimator, features, labels = ESTIMATORS[kind]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings of the deliberately short fits
        estimator.fit(features, labels)
    return estimator, features


@pytest.mark.parametrize("kind", sorted(ESTIMATORS))
def test_ordinary_estimators_load_without_trust(kind: str, tmp_path: Path) -> None:
    estimator, features = fitted(kind)
    path = tmp_path / "model.skops"
    sio.dump(estimator, path)
    # the list is what makes the difference (the test can fail): skops alone refuses some
    needs = set(sio.get_untrusted_types(file=path))
    assert needs <= REVIEWED_TYPES, needs - REVIEWED_TYPES
    model = SklearnLoader().load(path, outputs="probabilities")
    rows = (
        Features.from_frame(features)
        if isinstance(features, pd.DataFrame)
        else Features.from_matrix(features)
    )
    proba = estimator.predict_proba(features)
    expected = proba[:, 1] if proba.shape[1] == 2 else proba
    # the same estimator on the same rows: equal to the last bit
    np.testing.assert_array_equal(model.predict(rows), expected)


def test_the_list_is_needed() -> None:
    """Without the reviewed list, histogram boosting would need trust (skops' own list)."""
    estimator, _ = fitted("histogram boosting")
    assert "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor" in (
        sio.get_untrusted_types(data=sio.dumps(estimator))
    )


def test_a_histogram_boosting_file_audits_without_trust(tmp_path: Path) -> None:
    estimator, _ = fitted("histogram boosting")
    path = tmp_path / "hgb.skops"
    sio.dump(estimator, path)
    columns = [f"x{i}" for i in range(6)]
    for name, rows in (("train", slice(0, 120)), ("population", slice(120, 240))):
        frame = pd.DataFrame(X[rows], columns=columns)
        frame["label"] = Y[rows]
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    train, population = tmp_path / "train.csv", tmp_path / "population.csv"
    result = audit_files(path, train, population, "label", features=columns)
    assert 0 <= result.epsilon_star < 50


class Doubler(TransformerMixin, BaseEstimator):
    """A custom step: its code lives in the user's module, which epsstar has not reviewed."""

    def fit(self, features: Any, labels: Any = None) -> Doubler:
        return self

    def transform(self, features: Any) -> Any:
        return 2 * np.asarray(features)


def test_an_unknown_type_still_needs_trust(tmp_path: Path) -> None:
    path = tmp_path / "custom.skops"
    sio.dump(make_pipeline(Doubler(), LogisticRegression()).fit(X, Y), path)
    with pytest.raises(InvalidInputError) as caught:
        SklearnLoader().load(path)
    message = str(caught.value)
    assert "\n" not in message
    assert "--trust-model" in message
    assert message.endswith("Doubler.")
    assert SklearnLoader().load(path, trust=True).classes == (0, 1)


def _crafted(tmp_path: Path, estimator: Any, name: str) -> Path:
    path = tmp_path / name
    sio.dump(estimator, path)
    return path


def test_a_histogram_tree_pointing_outside_its_nodes_is_refused(tmp_path: Path) -> None:
    estimator, _ = fitted("histogram boosting")
    nodes = estimator._predictors[0][0].nodes
    nodes["right"][0] = 10_000  # past the end of the node array
    path = _crafted(tmp_path, estimator, "hgb.skops")
    with pytest.raises(
        InvalidInputError,
        match=r"Found a tree whose node 0 has right child "
        r"10000\.$",
    ):
        SklearnLoader().load(path)


def test_a_histogram_tree_looping_back_is_refused(tmp_path: Path) -> None:
    estimator, _ = fitted("histogram boosting")
    nodes = estimator._predictors[1][0].nodes
    split = int(np.flatnonzero(nodes["is_leaf"] == 0)[-1])
    nodes["left"][split] = 0  # a walk that never reaches a leaf
    with pytest.raises(InvalidInputError, match=rf"node {split} has left child 0\.$"):
        SklearnLoader().load(_crafted(tmp_path, estimator, "hgb.skops"))


def test_a_histogram_split_on_a_missing_feature_is_refused(tmp_path: Path) -> None:
    estimator, _ = fitted("histogram boosting")
    estimator._predictors[0][0].nodes["feature_idx"][0] = 99
    with pytest.raises(InvalidInputError, match=r"splits on feature 99 of a 6-feature input\.$"):
        SklearnLoader().load(_crafted(tmp_path, estimator, "hgb.skops"))


def test_a_decision_tree_pointing_outside_its_nodes_is_refused(tmp_path: Path) -> None:
    estimator, _ = fitted("random forest")
    tree = estimator.estimators_[3].tree_
    state = tree.__getstate__()
    state["nodes"]["left_child"][0] = -7_000  # before the start of the node array
    tree.__setstate__(state)
    with pytest.raises(InvalidInputError, match=r"node 0 has left child -7000\.$") as caught:
        SklearnLoader().load(_crafted(tmp_path, estimator, "forest.skops"))
    assert "\n" not in str(caught.value)


def test_a_decision_tree_split_on_a_missing_feature_is_refused(tmp_path: Path) -> None:
    estimator, _ = fitted("gradient boosting")
    tree = estimator.estimators_[2, 0].tree_
    state = tree.__getstate__()
    state["nodes"]["feature"][0] = 6
    tree.__setstate__(state)
    with pytest.raises(InvalidInputError, match=r"splits on feature 6 of a 6-feature input\.$"):
        SklearnLoader().load(_crafted(tmp_path, estimator, "boosting.skops"))
