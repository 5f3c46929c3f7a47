"""The scikit-learn loader: raw DataFrame pipelines, deterministic forests, exact losses."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from scipy.special import logsumexp
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from epsstar.audit.model.features import Features
from epsstar.exceptions import EpsstarWarning, InvalidInputError
from epsstar.loaders.sklearn import SklearnLoader
from epsstar.statistics.losses import MAX_ABS_LOGIT, compute_losses
from tests.conftest import audit_files

ROOT = Path(__file__).resolve().parents[2]
KINDS = ROOT / "fixtures" / "models" / "kinds"


def load(path: Path, **options: Any) -> Any:
    return SklearnLoader().load(path, **options)


def dump(model: Any, path: Path) -> Path:
    sio.dump(model, path)
    return path


# ----------------------------------------------------------------- typed DataFrames


def test_the_adult_pipeline_runs_on_raw_typed_columns(
    fixture_builder: Callable[[str], ModuleType],
) -> None:
    train, population = fixture_builder("sklearn_models").adult_frames()
    model = load(KINDS / "adult_pipeline.skops")
    columns = population.drop(columns="income")
    assert model.feature_names == tuple(columns.columns)
    assert "education-num" in model.feature_names
    assert model.n_features == 14
    assert model.classes == ("<=50K", ">50K")
    output = model.predict(Features.from_frame(columns))
    np.testing.assert_array_equal(output, model._estimator.decision_function(columns))
    # The committed file is the builder's recipe: refitted here, it gives the same scores,
    # up to the solver. L-BFGS stops once its gradient is below tol, along a path that
    # another BLAS (or numpy) rounds differently: the refit's log-odds then differ by
    # ~1e-7 relative (1.05e-7 seen with scikit-learn 1.9.1, numpy 2.4.6, pandas 3.1.1).
    # A stale recipe moves them by more than 4e-2 (one training row fewer: 4.4e-2; C=0.99:
    # 0.11), so 1e-5 keeps a 100-fold margin on each side.
    refitted = fixture_builder("sklearn_models").adult_pipeline(train)
    np.testing.assert_allclose(output, refitted.decision_function(columns), rtol=1e-5, atol=1e-5)
    assert model.output_kind == "logits"
    assert model.output_reading.reason == (
        "decision_function reproduces predict_proba; losses from it (exact)"
    )
    accuracy = np.mean(np.where(output > 0, ">50K", "<=50K") == population["income"])
    assert accuracy > 0.8


def test_named_columns_are_put_in_the_model_order(
    fixture_builder: Callable[[str], ModuleType],
) -> None:
    _, population = fixture_builder("sklearn_models").adult_frames()
    columns = population.drop(columns="income")
    model = load(KINDS / "adult_pipeline.skops")
    expected = model.predict(Features.from_frame(columns))
    shuffled = columns[list(reversed(columns.columns))]
    np.testing.assert_array_equal(model.predict(Features.from_frame(shuffled)), expected)


def test_text_columns_a_model_cannot_take_are_named_in_the_error(tmp_path: Path) -> None:
    frame = pd.DataFrame({"a": np.arange(20.0), "b": np.arange(20.0) % 3})
    model = LogisticRegression().fit(frame, np.arange(20) % 2)
    path = dump(model, tmp_path / "numeric.skops")
    text = pd.DataFrame({"a": np.arange(4.0), "b": ["x", "y", "x", "y"]})
    with pytest.raises(InvalidInputError, match=r"numeric\.skops must accept the features \(4 × 2"):
        load(path).predict(Features.from_frame(text))


# ---------------------------------------------------------------------- determinism


def test_parallel_forests_predict_the_same_numbers_every_time(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    features = rng.normal(size=(400, 6))
    labels = (features[:, 0] + rng.normal(size=400) > 0).astype(int)
    forest = RandomForestClassifier(n_jobs=2, n_estimators=50, random_state=0)
    path = dump(forest.fit(features, labels), tmp_path / "forest.skops")
    nested = dump(
        make_pipeline(StandardScaler(), RandomForestClassifier(n_jobs=3, n_estimators=5)).fit(
            features, labels
        ),
        tmp_path / "nested.skops",
    )
    first = load(path, trust=True)
    assert first._estimator.n_jobs == 1
    assert load(nested, trust=True)._estimator.get_params()["randomforestclassifier__n_jobs"] == 1
    runs = [first.predict(features), first.predict(features)]
    runs += [load(path, trust=True).predict(features) for _ in range(2)]
    for run in runs[1:]:
        np.testing.assert_array_equal(run, runs[0])
    assert first.output_kind == "probabilities"


def test_the_committed_forest_is_read_single_threaded(
    fixture_builder: Callable[[str], ModuleType],
) -> None:
    train, population = fixture_builder("sklearn_models").forest_frames()
    model = load(KINDS / "forest.skops", trust=True)
    assert model._estimator.n_jobs == 1
    assert model.feature_names == tuple(train.columns[:-1])
    assert model.classes == ("class_0", "class_1", "class_2")
    columns = population.drop(columns="label")
    probabilities = model.predict(Features.from_frame(columns))
    assert probabilities.shape == (len(population), 3)
    assert np.mean(np.asarray(model.classes)[probabilities.argmax(axis=1)] == population["label"])
    assert model.output_kind == "probabilities"
    # The committed file is the builder's recipe, bit for bit: no solver and no BLAS, the
    # seed grows the same trees, and on one thread (as the loader predicts) the trees'
    # probabilities are added in the same order. The recipe's n_jobs=2 would add them in
    # the order the threads finish, which changes the last bits from run to run.
    refitted = fixture_builder("sklearn_models").forest(train).set_params(n_jobs=1)
    np.testing.assert_array_equal(probabilities, refitted.predict_proba(columns))


# -------------------------------------------------------------------- exact losses


def separated(classes: int, size: int = 60) -> tuple[np.ndarray, np.ndarray]:
    """Classes far apart: the probabilities of the right class round to 1 in float64."""
    rng = np.random.default_rng(1)
    centres = 12.0 * np.eye(classes, 3)
    features = np.concatenate([rng.normal(loc=c, size=(size, 3)) for c in centres])
    return features, np.repeat(np.arange(classes), size)


def confident(features: np.ndarray, labels: np.ndarray) -> LogisticRegression:
    """A logistic regression whose scores reach ±50 (its fitted weights × 4)."""
    estimator = LogisticRegression(C=1e4, max_iter=10_000).fit(features, labels)
    estimator.coef_ *= 4.0
    estimator.intercept_ *= 4.0
    return estimator


def test_binary_losses_come_exactly_from_the_decision_function(tmp_path: Path) -> None:
    features, labels = separated(2)
    estimator = confident(features, labels)
    model = load(dump(estimator, tmp_path / "binary.skops"))
    output = model.predict(features)
    assert model.output_kind == "logits"
    losses = compute_losses(labels, output, outputs=model.output_kind)
    score = estimator.decision_function(features)
    np.testing.assert_array_equal(losses, (1 - 2 * labels) * score)
    # From the rounded probabilities these losses would stop at ±36.04.
    assert np.abs(losses).max() > MAX_ABS_LOGIT + 1.0
    assert (estimator.predict_proba(features).max(axis=1) == 1.0).any()
    saturated = compute_losses(labels, estimator.predict_proba(features)[:, 1])
    assert np.abs(saturated).max() <= MAX_ABS_LOGIT


def test_multiclass_losses_come_exactly_from_the_decision_function(tmp_path: Path) -> None:
    features, labels = separated(3)
    estimator = confident(features, labels)
    model = load(dump(estimator, tmp_path / "multi.skops"))
    losses = compute_losses(labels, model.predict(features), outputs=model.output_kind)
    scores = estimator.decision_function(features)
    rows = np.arange(labels.size)
    others = np.where(np.arange(3)[None, :] == labels[:, None], -np.inf, scores)
    np.testing.assert_allclose(losses, logsumexp(others, axis=1) - scores[rows, labels], rtol=1e-12)
    assert np.abs(losses).max() > MAX_ABS_LOGIT + 1.0


def test_a_pipeline_ending_in_sgd_log_loss_gives_logits(tmp_path: Path) -> None:
    features, labels = separated(2)
    pipeline = make_pipeline(StandardScaler(), SGDClassifier(loss="log_loss", random_state=0))
    model = load(dump(pipeline.fit(features, labels), tmp_path / "sgd.skops"))
    np.testing.assert_array_equal(model.predict(features), pipeline.decision_function(features))
    assert model.output_kind == "logits"


def test_accurate_log_probabilities_are_read_as_logits(tmp_path: Path) -> None:
    features, labels = separated(3, size=30)
    features = features + 30.0 * np.eye(3)[labels]  # wrong classes' probabilities underflow to 0
    estimator = GaussianNB().fit(features, labels)
    assert (estimator.predict_proba(features) == 0.0).any()
    model = load(dump(estimator, tmp_path / "nb.skops"))
    output = model.predict(features)
    assert model.output_kind == "logits"
    assert "predict_log_proba" in model.output_reading.reason
    np.testing.assert_array_equal(output, estimator.predict_log_proba(features))
    assert np.all(np.isfinite(compute_losses(labels, output, outputs="logits")))


def test_outputs_force_the_method(tmp_path: Path) -> None:
    features, labels = separated(2)
    estimator = LogisticRegression(max_iter=1000).fit(features, labels)
    path = dump(estimator, tmp_path / "binary.skops")
    forced = load(path, outputs="probabilities")
    np.testing.assert_array_equal(forced.predict(features), estimator.predict_proba(features)[:, 1])
    assert forced.output_kind == "probabilities"
    assert forced.output_reading.source == "requested"
    logits = load(path, outputs="logits")
    np.testing.assert_array_equal(logits.predict(features), estimator.decision_function(features))


def test_the_method_is_chosen_once_on_the_first_batch(tmp_path: Path) -> None:
    features, labels = separated(2)
    model = load(dump(GaussianNB().fit(features, labels), tmp_path / "nb.skops"))
    with pytest.raises(InvalidInputError, match=r"detected on the first predict\(\) call"):
        _ = model.output_kind
    model.predict(features[:5])
    kind = model.output_kind
    model.predict(features * 100.0)
    assert model.output_kind == kind


# ----------------------------------------------------------------- audits end to end


def test_auditing_the_adult_pipeline_on_raw_csv_files(
    tmp_path: Path, fixture_builder: Callable[[str], ModuleType]
) -> None:
    train_path, population_path = fixture_builder("sklearn_models").write_adult_csvs(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EpsstarWarning)
        result = audit_files(
            KINDS / "adult_pipeline.skops", train_path, population_path, label_column="income"
        )
    assert result.provenance.output_kind == "logits"
    assert np.isfinite(result.epsilon_star)


# ----------------------------------------------------------------------- missing values


def test_missing_values_reach_only_estimators_that_declare_them(tmp_path: Path) -> None:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.impute import SimpleImputer

    features, labels = separated(2)
    gaps = features.copy()
    gaps[::7, 1] = np.nan
    histogram = HistGradientBoostingClassifier(max_iter=10).fit(gaps, labels)
    model = load(dump(histogram, tmp_path / "hgb.skops"), trust=True)
    assert model.accepts_missing is True
    np.testing.assert_array_equal(model.predict(gaps), histogram.decision_function(gaps))
    assert load(dump(LogisticRegression().fit(features, labels), tmp_path / "lr.skops"))
    assert not load(tmp_path / "lr.skops").accepts_missing
    # a pipeline handles them when an imputer meets them before a step that does not
    imputing = make_pipeline(StandardScaler(), SimpleImputer(), LogisticRegression())
    imputing.fit(gaps, labels)
    model = load(dump(imputing, tmp_path / "imputing.skops"), trust=True)
    assert model.accepts_missing is True
    np.testing.assert_array_equal(model.predict(gaps), imputing.decision_function(gaps))
    scaling = make_pipeline(StandardScaler(), LogisticRegression()).fit(features, labels)
    assert not load(dump(scaling, tmp_path / "scaling.skops"), trust=True).accepts_missing
