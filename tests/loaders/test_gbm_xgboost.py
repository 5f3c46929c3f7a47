"""The XGBoost loader: contract, margins, refusals, audits through the API and CLI."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import epsstar.audit.model.contract
from epsstar.audit.model.plugins import loader_for_path
from epsstar.audit.run import audit
from epsstar.cli import main
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.statistics.losses import compute_losses

xgb = pytest.importorskip("xgboost")
from epsstar.loaders.xgboost import XGBoostLoader  # noqa: E402

KINDS = Path(__file__).resolve().parents[2] / "fixtures" / "models" / "kinds"
TASKS = {"adult": "income", "wine": "cultivar"}
FILES = ("adult_xgboost.json", "adult_xgboost.ubj", "wine_xgboost.json")
# XGBoost sums the trees in float32, the reference below in float64: 8.5e-7 apart at worst
# on the fixtures (about 64 float32 roundings of margins up to 10); a wrong tree or split
# moves a margin by a leaf value, far above 1e-5.
FLOAT32_TOLERANCE = {"rtol": 1e-5, "atol": 1e-5}


def task_of(file: str) -> str:
    return file.split("_", 1)[0]


@cache
def table(task: str, part: str) -> tuple[np.ndarray, np.ndarray]:
    frame = pd.read_csv(KINDS / f"{task}_numeric_{part}.csv")
    label = TASKS[task]
    return frame.drop(columns=[label]).to_numpy(np.float64), frame[label].to_numpy()


def margins_float64(path: Path, rows: np.ndarray) -> np.ndarray:
    """Margins summed tree by tree in float64 from the JSON model (numeric splits only).

    A record goes left when ``x < split_condition`` (both as float32, as XGBoost compares);
    a leaf's value is its ``split_condition``. The base score is a probability for
    ``binary:logistic`` (its log-odds is added) and a margin for ``multi:softprob``.
    """
    learner = json.loads(path.read_text())["learner"]
    model = learner["gradient_booster"]["model"]
    groups = max(1, int(learner["learner_model_param"]["num_class"]))
    base = np.array(json.loads(learner["learner_model_param"]["base_score"]), dtype=np.float64)
    if learner["objective"]["name"] == "binary:logistic":
        base = np.log(base / (1 - base))
    scores = np.zeros((rows.shape[0], groups)) + base
    rows32 = rows.astype(np.float32)
    for tree, group in zip(model["trees"], model["tree_info"], strict=True):
        left, right = tree["left_children"], tree["right_children"]
        conditions = np.asarray(tree["split_conditions"], dtype=np.float32)
        for i, row in enumerate(rows32):
            node = 0
            while left[node] != -1:
                goes_left = row[tree["split_indices"][node]] < conditions[node]
                node = left[node] if goes_left else right[node]
            scores[i, group] += float(conditions[node])
    return scores[:, 0] if groups == 1 else scores


@pytest.mark.parametrize("check", epsstar.audit.model.contract.CHECKS)
@pytest.mark.parametrize("file", FILES)
def test_xgboost_meets_the_loader_contract(file: str, check: str) -> None:
    features, _ = table(task_of(file), "population")
    checks = dict(
        epsstar.audit.model.contract.loader_checks(XGBoostLoader(), KINDS / file, features)
    )
    checks[check]()


@pytest.mark.parametrize("suffix", [".json", ".ubj"])
def test_the_entry_point_claims_json_and_ubj_files(suffix: str) -> None:
    loader, info = loader_for_path(Path(f"model{suffix}"))
    assert (loader.name, info.name) == ("xgboost", "xgboost")


@pytest.mark.parametrize("file", FILES)
def test_logits_are_the_margins_and_match_a_float64_tree_sum(file: str) -> None:
    path = KINDS / file
    model = XGBoostLoader().load(path)
    features, _ = table(task_of(file), "population")
    logits = model.predict(features)
    booster = xgb.Booster(model_file=str(path))
    matrix = xgb.DMatrix(features, feature_names=booster.feature_names)
    margins = booster.predict(matrix, output_margin=True)
    assert model.output_kind == "logits"
    assert logits.dtype == np.float64
    assert np.array_equal(logits, margins.astype(np.float64))
    # the .ubj file holds the same model as its .json twin, which is read here
    independent = margins_float64(path.with_suffix(".json"), features)
    np.testing.assert_allclose(logits, independent, **FLOAT32_TOLERANCE)
    assert model.feature_names == tuple(booster.feature_names)
    assert model.classes is None


@pytest.mark.parametrize("file", ["adult_xgboost.ubj", "wine_xgboost.json"])
def test_audit_losses_agree_with_xgboost_predict_proba(file: str) -> None:
    task = task_of(file)
    result = audit(
        KINDS / file,
        KINDS / f"{task}_numeric_train.csv",
        KINDS / f"{task}_numeric_population.csv",
        label_column=TASKS[task],
        method=None if task == "adult" else "empirical",
        n_bootstrap=10,
    )
    features, labels = table(task, "train")
    classifier = xgb.XGBClassifier()
    classifier.load_model(str(KINDS / file))
    probabilities = classifier.predict_proba(
        pd.DataFrame(features, columns=classifier.feature_names_in_)
    )
    if probabilities.shape[1] == 2:
        probabilities = probabilities[:, 1]
    from_float32 = compute_losses(labels, probabilities.astype(np.float64))
    # log(p / (1 - p)) of a float32 p carries 6e-8 / (1 - p) of error: 7.5e-6 at worst on
    # these records (1e-4 is 13 times that); the exact losses are checked just below
    np.testing.assert_allclose(result.train_losses, from_float32, rtol=1e-4, atol=1e-4)
    margins = margins_float64((KINDS / file).with_suffix(".json"), features)
    exact = compute_losses(labels, margins, outputs="logits")
    np.testing.assert_allclose(result.train_losses, exact, **FLOAT32_TOLERANCE)


def test_cli_audits_the_adult_booster(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "audit",
            str(KINDS / "adult_xgboost.json"),
            "--train",
            str(KINDS / "adult_numeric_train.csv"),
            "--population",
            str(KINDS / "adult_numeric_population.csv"),
            "--label-column",
            "income",
            "--n-bootstrap",
            "10",
            "--quiet",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "Epsilon*" in out


def _train(folder: Path, objective: str, name: str = "model.json", **extra: Any) -> Path:
    rng = np.random.default_rng(2)
    features = rng.normal(size=(200, 3))
    labels = (features[:, 0] + 0.5 * rng.normal(size=200) > 0).astype(int)
    params = {"objective": objective, "nthread": 1, "max_depth": 2, "seed": 0, **extra}
    booster = xgb.train(params, xgb.DMatrix(features, label=labels), num_boost_round=4)
    path = folder / name
    booster.save_model(str(path))
    return path


@pytest.mark.parametrize("objective", ["reg:squarederror", "binary:hinge", "reg:logistic"])
def test_non_classification_objectives_are_refused(tmp_path: Path, objective: str) -> None:
    path = _train(tmp_path, objective)
    with pytest.raises(
        InvalidInputError, match=rf"must be a classifier.*Found objective '{objective}'"
    ):
        XGBoostLoader().load(path)


def test_binary_logitraw_margins_are_logits(tmp_path: Path) -> None:
    path = _train(tmp_path, "binary:logitraw", name="model.ubj")
    features = np.random.default_rng(3).normal(size=(20, 3))
    model = XGBoostLoader().load(path)
    booster = xgb.Booster(model_file=str(path))
    expected = booster.predict(xgb.DMatrix(features), output_margin=True)
    assert model.output_kind == "logits"
    assert model.feature_names is None
    np.testing.assert_array_equal(model.predict(features), expected)


@pytest.mark.parametrize("text", ['{"name": "not a model"}', "[1, 2, 3]", "{not json"])
def test_a_json_file_that_is_not_an_xgboost_model_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "settings.json"
    path.write_text(text)
    with pytest.raises(InputFileError, match=r"must be an XGBoost model.*settings\.json"):
        XGBoostLoader().load(path)


def test_classes_recorded_by_the_scikit_learn_wrapper_are_used(tmp_path: Path) -> None:
    path = _train(tmp_path, "binary:logistic")
    booster = xgb.Booster(model_file=str(path))
    booster.set_attr(scikit_learn=json.dumps({"classes_": ["no", "yes"]}))
    booster.save_model(str(path))
    assert XGBoostLoader().load(path).classes == ("no", "yes")


def test_categorical_features_are_refused(tmp_path: Path) -> None:
    frame = pd.DataFrame({"size": np.arange(60.0), "colour": pd.Categorical(["a", "b", "c"] * 20)})
    matrix = xgb.DMatrix(frame, label=np.arange(60) % 2, enable_categorical=True)
    booster = xgb.train({"objective": "binary:logistic", "nthread": 1}, matrix, 2)
    path = tmp_path / "model.json"
    booster.save_model(str(path))
    with pytest.raises(
        InvalidInputError, match=r"numeric features only.*Found categorical feature\(s\) colour"
    ):
        XGBoostLoader().load(path)


def test_multi_target_models_are_refused(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    features = rng.normal(size=(100, 3))
    labels = np.column_stack([features[:, 0] > 0, features[:, 1] > 0]).astype(int)
    params = {"objective": "binary:logistic", "nthread": 1, "tree_method": "hist"}
    booster = xgb.train(params, xgb.DMatrix(features, label=labels), num_boost_round=2)
    path = tmp_path / "model.json"
    booster.save_model(str(path))
    with pytest.raises(InvalidInputError, match=r"must predict one target.*Found 2 targets"):
        XGBoostLoader().load(path)
