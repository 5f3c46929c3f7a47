"""The LightGBM loader: contract, exact logits, refusals, audits through the API and CLI."""

from __future__ import annotations

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

lgb = pytest.importorskip("lightgbm")
from epsstar.loaders.lightgbm import LightGBMLoader  # noqa: E402

KINDS = Path(__file__).resolve().parents[2] / "fixtures" / "models" / "kinds"
TASKS = {"adult": "income", "wine": "cultivar"}


@cache
def table(task: str, part: str) -> tuple[np.ndarray, np.ndarray]:
    frame = pd.read_csv(KINDS / f"{task}_numeric_{part}.csv")
    label = TASKS[task]
    return frame.drop(columns=[label]).to_numpy(np.float64), frame[label].to_numpy()


def tree_sum(node: dict[str, Any], row: np.ndarray) -> float:
    """The leaf value one tree of ``Booster.dump_model()`` gives a record (numeric splits)."""
    while "leaf_value" not in node:
        assert node["decision_type"] == "<="
        go_left = row[node["split_feature"]] <= node["threshold"]
        node = node["left_child"] if go_left else node["right_child"]
    return float(node["leaf_value"])


def raw_scores_float64(path: Path, rows: np.ndarray) -> np.ndarray:
    """Raw scores summed tree by tree in float64 from the booster's JSON dump."""
    dump = lgb.Booster(model_file=str(path)).dump_model()
    per_iteration = dump["num_tree_per_iteration"]
    scores = np.zeros((rows.shape[0], per_iteration))
    for index, tree in enumerate(dump["tree_info"]):
        column = index % per_iteration
        scores[:, column] += [tree_sum(tree["tree_structure"], row) for row in rows]
    return scores[:, 0] if per_iteration == 1 else scores


@pytest.mark.parametrize("check", epsstar.audit.model.contract.CHECKS)
@pytest.mark.parametrize("task", TASKS)
def test_lightgbm_meets_the_loader_contract(task: str, check: str) -> None:
    features, _ = table(task, "population")
    checks = dict(
        epsstar.audit.model.contract.loader_checks(
            LightGBMLoader(), KINDS / f"{task}_lightgbm.txt", features
        )
    )
    checks[check]()


def test_the_entry_point_claims_txt_files() -> None:
    loader, info = loader_for_path(Path("model.txt"))
    assert (loader.name, info.name) == ("lightgbm", "lightgbm")


@pytest.mark.parametrize("task", TASKS)
def test_logits_are_the_raw_scores_and_match_a_float64_tree_sum(task: str) -> None:
    path = KINDS / f"{task}_lightgbm.txt"
    model = LightGBMLoader().load(path)
    features, _ = table(task, "population")
    logits = model.predict(features)
    booster = lgb.Booster(model_file=str(path))
    assert model.output_kind == "logits"
    assert logits.dtype == np.float64
    assert np.array_equal(logits, booster.predict(features, raw_score=True))
    # both sum the same leaf values in float64, tree by tree (0 apart today)
    np.testing.assert_allclose(logits, raw_scores_float64(path, features), rtol=0, atol=1e-12)
    assert model.classes is None
    assert model.n_features == features.shape[1]
    assert model.feature_names == tuple(booster.feature_name())


@pytest.mark.parametrize("task", TASKS)
def test_audit_losses_agree_with_lightgbm_probabilities(task: str) -> None:
    path = KINDS / f"{task}_lightgbm.txt"
    result = audit_files(
        path,
        KINDS / f"{task}_numeric_train.csv",
        KINDS / f"{task}_numeric_population.csv",
        label_column=TASKS[task],
        method=None if task == "adult" else "empirical",
        n_bootstrap=10,
    )
    features, labels = table(task, "train")
    booster = lgb.Booster(model_file=str(path))
    exact = compute_losses(labels, booster.predict(features, raw_score=True), outputs="logits")
    assert np.array_equal(result.train_losses, exact)
    from_probabilities = compute_losses(labels, booster.predict(features))
    # LightGBM's float64 probabilities, read back as log-odds: 3e-15 off (no p near 1 here)
    np.testing.assert_allclose(result.train_losses, from_probabilities, rtol=1e-9, atol=1e-9)
    assert np.isfinite(result.epsilon_star)


def test_cli_audits_the_adult_booster(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "audit",
            str(KINDS / "adult_lightgbm.txt"),
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


def _train(folder: Path, params: dict[str, Any], frame: Any, labels: np.ndarray) -> Path:
    booster = lgb.train(
        {"num_threads": 1, "verbose": -1, "seed": 0, "num_leaves": 4, **params},
        lgb.Dataset(frame, label=labels),
        num_boost_round=5,
    )
    path = folder / "model.txt"
    booster.save_model(str(path))
    return path


def _data(rows: int = 200) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    features = rng.normal(size=(rows, 3))
    return features, (features[:, 0] + 0.5 * rng.normal(size=rows) > 0).astype(int)


def test_regression_boosters_are_refused(tmp_path: Path) -> None:
    features, labels = _data()
    path = _train(tmp_path, {"objective": "regression"}, features, labels)
    with pytest.raises(
        InvalidInputError, match=r"must be a classifier.*Found objective 'regression'"
    ):
        LightGBMLoader().load(path)


@pytest.mark.parametrize("text", ["just some notes\n", "tree\nversion=v4\nnum_class=1\n"])
def test_a_txt_file_that_is_not_a_whole_lightgbm_model_is_refused(
    tmp_path: Path, text: str
) -> None:
    path = tmp_path / "notes.txt"
    path.write_text(text)
    with pytest.raises(InputFileError, match=r"must be a whole LightGBM model.*notes\.txt"):
        LightGBMLoader().load(path)


def test_default_column_names_are_not_recorded_names(tmp_path: Path) -> None:
    features, labels = _data()
    path = _train(tmp_path, {"objective": "binary"}, features, labels)
    assert LightGBMLoader().load(path).feature_names is None


def test_sigmoid_parameter_scales_the_log_odds(tmp_path: Path) -> None:
    features, labels = _data()
    path = _train(tmp_path, {"objective": "binary", "sigmoid": 2.5}, features, labels)
    logits = LightGBMLoader().load(path).predict(features)
    probabilities = lgb.Booster(model_file=str(path)).predict(features)
    np.testing.assert_allclose(1 / (1 + np.exp(-logits)), probabilities, rtol=1e-12)


def test_multiclassova_gives_normalised_one_vs_rest_probabilities(tmp_path: Path) -> None:
    features, _ = _data()
    labels = np.digitize(features[:, 0], [-0.5, 0.5])
    params = {"objective": "multiclassova", "num_class": 3}
    path = _train(tmp_path, params, features, labels)
    model = LightGBMLoader().load(path)
    one_vs_rest = lgb.Booster(model_file=str(path)).predict(features)
    expected = one_vs_rest / one_vs_rest.sum(axis=1, keepdims=True)
    probabilities = LightGBMLoader().load(path, outputs="probabilities").predict(features)
    np.testing.assert_allclose(probabilities, expected, rtol=1e-12)
    logits = model.predict(features)
    softmax = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(softmax, expected, rtol=1e-12)


def test_pandas_category_columns_are_passed_as_categories(tmp_path: Path) -> None:
    features, _ = _data()
    codes = (features[:, 1] > 0).astype(int) + (features[:, 2] > 1).astype(int)
    colours = np.array(["red", "green", "blue"])[codes]
    labels = (features[:, 0] + 2.0 * (codes - 1) > 0).astype(int)
    frame = pd.DataFrame({"size": features[:, 0], "colour": pd.Categorical(colours)})
    path = _train(tmp_path, {"objective": "binary", "min_data_per_group": 5}, frame, labels)
    model = LightGBMLoader().load(path)
    typed = Features(("size", "colour"), (features[:, 0], colours.astype(object)))
    expected = lgb.Booster(model_file=str(path)).predict(frame, raw_score=True)
    assert model.feature_names == ("size", "colour")
    np.testing.assert_array_equal(model.predict(typed), expected)
    assert model.categorical == (1,)
    # a batch holding one colour only is mapped with the categories LightGBM recorded
    blue = np.flatnonzero(colours == "blue")
    only_blue = Features(("size", "colour"), (features[blue, 0], colours[blue].astype(object)))
    np.testing.assert_array_equal(model.predict(only_blue), expected[blue])

    with pytest.raises(InvalidInputError, match=r"must have 2 columns.*Found 1 column"):
        model.predict(Features(("colour",), (colours.astype(object),)))


def _colours(rows: int = 300) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(5)
    colour = rng.choice(["red", "green", "blue", "amber"], size=rows)
    size = rng.normal(size=rows)
    labels = (size + (colour == "red") * 2.0 - (colour == "blue") > 0).astype(int)
    return pd.DataFrame({"size": size, "colour": pd.Categorical(colour)}), labels


def _typed(frame: pd.DataFrame) -> Features:
    return Features(
        tuple(frame.columns),
        tuple(np.asarray(frame[c], dtype=object if c == "colour" else None) for c in frame),
    )


def test_text_codes_and_unseen_categories_are_read_as_lightgbm_reads_them(tmp_path: Path) -> None:
    frame, labels = _colours()
    path = _train(tmp_path, {"objective": "binary", "min_data_per_group": 5}, frame, labels)
    model = LightGBMLoader().load(path)
    booster = lgb.Booster(model_file=str(path))
    assert (model.takes_text, model.accepts_missing, model.categorical) == (True, True, (1,))
    expected = booster.predict(frame, raw_score=True)
    np.testing.assert_array_equal(model.predict(_typed(frame)), expected)
    codes = frame.assign(colour=frame["colour"].cat.codes.astype(np.int64))
    np.testing.assert_array_equal(model.predict(Features.from_frame(codes)), expected)
    # a colour LightGBM never saw, and a missing one, are missing values, as in its predict
    odd = frame.assign(colour=np.where(np.arange(len(frame)) % 3 == 0, "violet", frame["colour"]))
    odd.loc[1, "colour"] = np.nan
    own = booster.predict(odd.assign(colour=pd.Categorical(odd["colour"])), raw_score=True)
    np.testing.assert_array_equal(model.predict(_typed(odd)), own)


def test_numbers_of_a_category_of_numbers_are_the_categories(tmp_path: Path) -> None:
    frame, labels = _colours()
    sizes = {"red": 3, "green": 7, "blue": 11, "amber": 15}
    numbers = frame.assign(colour=pd.Categorical(frame["colour"].map(sizes).astype(int)))
    path = _train(tmp_path, {"objective": "binary", "min_data_per_group": 5}, numbers, labels)
    model = LightGBMLoader().load(path)
    as_read = numbers.assign(colour=numbers["colour"].astype(np.float64))  # a file's numbers
    expected = lgb.Booster(model_file=str(path)).predict(numbers, raw_score=True)
    np.testing.assert_array_equal(model.predict(Features.from_frame(as_read)), expected)


def test_text_in_a_numeric_feature_and_text_without_categories_are_refused(
    tmp_path: Path,
) -> None:
    frame, labels = _colours()
    path = _train(tmp_path, {"objective": "binary", "min_data_per_group": 5}, frame, labels)
    wrong = frame.assign(size=frame["colour"].astype(str), colour=frame["colour"].cat.codes)
    with pytest.raises(InvalidInputError, match=r"'size' must be numeric for the LightGBM.*'"):
        LightGBMLoader().load(path).predict(_typed(wrong))
    coded = frame.assign(colour=frame["colour"].cat.codes).to_numpy(np.float64)
    booster = lgb.train(
        {"objective": "binary", "num_threads": 1, "verbose": -1, "min_data_per_group": 5},
        lgb.Dataset(coded, label=labels, categorical_feature=[1]),
        num_boost_round=5,
    )
    plain = tmp_path / "plain.txt"
    booster.save_model(str(plain))
    model = LightGBMLoader().load(plain)
    assert (model.categorical, model.takes_text) == ((1,), False)
    with pytest.raises(InvalidInputError, match=r"must hold the category codes.*Found 'red'"):
        model.predict(Features(("a", "b"), (frame["size"].to_numpy(), np.array(["red"] * 300))))


def test_category_lists_that_cannot_be_matched_to_the_features(tmp_path: Path) -> None:
    frame, labels = _colours()
    grade = np.arange(len(frame)) % 4
    extra = frame.assign(grade=grade)
    params = {"objective": "binary", "min_data_per_group": 5}
    declared = lgb.train(
        {"num_threads": 1, "verbose": -1, "num_leaves": 4, **params},
        lgb.Dataset(extra, label=labels, categorical_feature=["colour", "grade"]),
        num_boost_round=5,
    )
    path = tmp_path / "declared.txt"
    declared.save_model(str(path))
    model = LightGBMLoader().load(path)  # 1 list for 2 categorical features: codes only
    assert model.takes_text is False
    codes = extra.assign(colour=frame["colour"].cat.codes.astype(float))
    np.testing.assert_array_equal(
        model.predict(Features.from_frame(codes)),
        declared.predict(codes.to_numpy(np.float64), raw_score=True),
    )
    with pytest.raises(InvalidInputError, match=r"1 lists of pandas categories for 2 categorical"):
        model.predict(_typed(extra))
    numbers = extra.assign(colour=pd.Categorical(frame["colour"].cat.codes + 3))
    declared = lgb.train(
        {"num_threads": 1, "verbose": -1, "num_leaves": 4, **params},
        lgb.Dataset(numbers, label=labels, categorical_feature=["colour", "grade"]),
        num_boost_round=5,
    )
    declared.save_model(str(path))
    with pytest.raises(InvalidInputError, match=r"as categories or as codes.*Found categories 3"):
        LightGBMLoader().load(path)


def test_a_loader_reading_categories_wrongly_is_refused_by_its_self_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from epsstar.loaders.categories import Categories

    frame, labels = _colours()
    path = _train(tmp_path, {"objective": "binary", "min_data_per_group": 5}, frame, labels)
    right = Categories.codes
    monkeypatch.setattr(Categories, "codes", lambda self, column: right(self, column)[::-1])
    with pytest.raises(
        InvalidInputError,
        match=r"model\.txt must be scored as its own Booster\.predict scores it, but on the "
        r"first 256 records .* differ from it by up to 0\.\d+",
    ):
        LightGBMLoader().load(path).predict(_typed(frame))
