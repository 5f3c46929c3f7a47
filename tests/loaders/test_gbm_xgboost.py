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
from epsstar.audit.model.features import Features
from epsstar.audit.model.plugins import loader_for_path
from epsstar.cli import main
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.statistics.losses import compute_losses
from tests.conftest import audit_files

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
    result = audit_files(
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


def _categorical(folder: Path) -> tuple[Path, pd.DataFrame]:
    rng = np.random.default_rng(6)
    colour = rng.choice(["red", "green", "blue", "amber"], size=300)
    size = rng.normal(size=300)
    labels = (size + (colour == "red") * 2.0 - (colour == "blue") > 0).astype(int)
    frame = pd.DataFrame({"size": size, "colour": pd.Categorical(colour)})
    matrix = xgb.DMatrix(frame, label=labels, enable_categorical=True)
    params = {"objective": "binary:logistic", "nthread": 1, "max_depth": 3, "max_cat_to_onehot": 1}
    booster = xgb.train(params, matrix, 8)
    path = folder / "model.json"
    booster.save_model(str(path))
    return path, frame


def _text(frame: pd.DataFrame) -> Features:
    return Features(
        ("size", "colour"), (frame["size"].to_numpy(), frame["colour"].to_numpy(dtype=object))
    )


def test_categories_are_read_from_text_and_codes_as_xgboost_reads_them(tmp_path: Path) -> None:
    path, frame = _categorical(tmp_path)
    model = XGBoostLoader().load(path)
    booster = xgb.Booster(model_file=str(path))
    assert (model.takes_text, model.accepts_missing) == (True, True)
    expected = booster.predict(xgb.DMatrix(frame, enable_categorical=True), output_margin=True)
    np.testing.assert_array_equal(model.predict(_text(frame)), expected)
    # a batch holding some colours only is coded with the categories XGBoost recorded
    some = frame[frame["colour"].isin(["red", "amber"])]
    np.testing.assert_array_equal(
        model.predict(_text(some)), expected[frame["colour"].isin(["red", "amber"])]
    )
    codes = frame.assign(colour=frame["colour"].cat.codes.astype(np.int64))
    np.testing.assert_array_equal(model.predict(Features.from_frame(codes)), expected)
    # a colour the model never saw is missing to XGBoost, and counted
    odd = frame.assign(colour=frame["colour"].astype(object))
    odd.loc[4, "colour"] = "violet"
    gap = frame.assign(colour=frame["colour"].cat.set_categories(frame["colour"].cat.categories))
    gap.loc[4, "colour"] = np.nan
    missing = booster.predict(xgb.DMatrix(gap, enable_categorical=True), output_margin=True)
    assert model.input_notes == ()
    np.testing.assert_array_equal(model.predict(_text(odd)), missing)
    assert model.input_notes[0].startswith("1 record(s) held a category the XGBoost model")


def test_a_categorical_model_without_recorded_categories_takes_codes(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    codes = rng.integers(0, 4, size=200).astype(np.float64)
    features = np.column_stack([rng.normal(size=200), codes])
    labels = (features[:, 0] + (codes == 2) > 0).astype(int)
    matrix = xgb.DMatrix(features, label=labels, feature_types=["q", "c"], enable_categorical=True)
    booster = xgb.train({"objective": "binary:logistic", "nthread": 1}, matrix, 4)
    path = tmp_path / "model.json"
    booster.save_model(str(path))
    model = XGBoostLoader().load(path)
    assert model.takes_text is False
    expected = booster.predict(
        xgb.DMatrix(features, feature_types=["q", "c"], enable_categorical=True), output_margin=True
    )
    np.testing.assert_array_equal(model.predict(features), expected)
    text = Features(("f0", "f1"), (features[:, 0], np.array(["a"] * 200, dtype=object)))
    with pytest.raises(InvalidInputError, match=r"'f1' must hold the category codes.*Found 'a'"):
        model.predict(text)


def _early_stopped(folder: Path) -> tuple[Path, np.ndarray, Any]:
    rng = np.random.default_rng(8)
    features = rng.normal(size=(600, 3))
    labels = (features[:, 0] + rng.normal(size=600) > 0).astype(int)
    train = xgb.DMatrix(features[:400], label=labels[:400])
    valid = xgb.DMatrix(features[400:], label=labels[400:])
    params = {"objective": "binary:logistic", "nthread": 1, "max_depth": 4, "eta": 0.5}
    booster = xgb.train(
        params, train, 60, evals=[(valid, "valid")], early_stopping_rounds=3, verbose_eval=False
    )
    assert booster.best_iteration + 1 < booster.num_boosted_rounds()
    path = folder / "model.ubj"
    booster.save_model(str(path))
    return path, features, booster


def test_an_early_stopped_booster_is_scored_at_its_best_iteration(tmp_path: Path) -> None:
    path, features, booster = _early_stopped(tmp_path)
    model = XGBoostLoader().load(path)
    best = booster.best_iteration + 1
    assert model.iteration_range == (0, best)
    matrix = xgb.DMatrix(features)
    expected = booster.predict(matrix, output_margin=True, iteration_range=(0, best))
    np.testing.assert_array_equal(model.predict(features), expected)
    every_tree = booster.predict(matrix, output_margin=True)
    assert np.abs(model.predict(features) - every_tree).max() > 0.1


def test_a_loader_scoring_other_trees_is_refused_by_its_self_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import epsstar.loaders.xgboost

    path, features, _ = _early_stopped(tmp_path)
    monkeypatch.setattr(epsstar.loaders.xgboost, "_iteration_range", lambda booster, config: (0, 0))
    with pytest.raises(
        InvalidInputError,
        match=r"model\.ubj must be scored as its own XGBClassifier\.predict_proba scores it, but "
        r"on the first 256 records the audit's probabilities differ from it by up to 0\.\d+",
    ):
        XGBoostLoader().load(path).predict(features)


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
