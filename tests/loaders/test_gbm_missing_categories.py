"""Category columns with missing values, categories a model never saw, and text labels.

Each model is trained here with its own library on pandas ``category`` columns holding
missing values, saved as users save it, and audited end to end through the CLI; the
audit's Epsilon* and accuracy are compared with those computed from the library's own
``predict_proba`` on the same records (the helpers of ``test_gbm_native_inputs``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.conftest import invoke
from tests.loaders.test_converted_models import refused
from tests.loaders.test_gbm_native_inputs import (
    COLOURS,
    ROWS,
    assert_audit_matches,
    audit_cli,
    records,
    typed,
)

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")
sio = pytest.importorskip("skops.io")

#: The share of the colours left missing.
GAPS = 0.15


def with_gaps(rows: int, seed: int) -> pd.DataFrame:
    """:func:`records` with a share :data:`GAPS` of ``colour`` (and of ``size``) missing."""
    frame = records(rows, seed, gaps=GAPS)
    colour = frame["colour"].astype(object)
    colour[np.random.default_rng(seed + 100).random(rows) < GAPS] = None
    frame["colour"] = colour
    return frame


def write(frame: pd.DataFrame, path: Path) -> Path:
    """The records as the user holds them: Parquet keeps the ``category`` type (missing
    values and all), CSV writes them as text and empty fields."""
    out = typed(frame)
    out["label"] = frame["label"]
    if path.suffix == ".parquet":
        out.to_parquet(path)
    else:
        out.to_csv(path, index=False)
    return path


def histogram(train: pd.DataFrame) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    classifier = HistGradientBoostingClassifier(
        categorical_features="from_dtype", max_iter=30, random_state=0
    )
    return classifier.fit(typed(train), train["label"])


def imputing_pipeline(train: pd.DataFrame) -> Any:
    from sklearn.compose import make_column_transformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    columns = make_column_transformer(
        (make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), ["size", "weight"]),
        (
            make_pipeline(
                SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")
            ),
            ["colour"],
        ),
    )
    return make_pipeline(columns, LogisticRegression()).fit(typed(train), train["label"])


def lightgbm(train: pd.DataFrame) -> Any:
    classifier = lgb.LGBMClassifier(
        n_estimators=30, num_leaves=16, min_child_samples=3, min_data_per_group=5,
        cat_smooth=1.0, n_jobs=1, verbose=-1, random_state=0,
    )  # fmt: skip
    return classifier.fit(typed(train), train["label"])


def save(classifier: Any, folder: Path) -> Path:
    if isinstance(classifier, lgb.LGBMClassifier):
        path = folder / "model.txt"
        classifier.booster_.save_model(str(path))
    else:
        path = folder / "model.skops"
        sio.dump(classifier, path)
    return path


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
@pytest.mark.parametrize("fit", [histogram, imputing_pipeline, lightgbm])
def test_missing_categories_are_read_as_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fit: Any, suffix: str
) -> None:
    train, population = with_gaps(ROWS, 11), with_gaps(ROWS, 12)
    assert train["colour"].isna().any()
    assert population["colour"].isna().any()
    classifier = fit(train)
    document = audit_cli(
        save(classifier, tmp_path),
        write(train, tmp_path / f"train{suffix}"),
        write(population, tmp_path / f"population{suffix}"),
        capsys,
    )
    # Refused before: "feature column 'colour' must hold numbers, booleans or text. Found
    # None" from Parquet, and for the pipeline "must have a value in every row" from both.
    # Epsilon* is 3.29 (histogram), 1.34 (pipeline) and 3.52 (LightGBM) here.
    own = assert_audit_matches(
        document, lambda frame: classifier.predict_proba(typed(frame)), train, population
    )
    assert own > 1.0


def test_a_pipeline_passing_missing_values_to_a_step_without_them_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sklearn.compose import make_column_transformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    train, population = with_gaps(ROWS, 13), with_gaps(ROWS, 14)
    encoder = make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder())
    columns = make_column_transformer((encoder, ["colour"]), remainder="passthrough")
    pipeline = make_pipeline(columns, LogisticRegression())
    full = train.dropna()
    pipeline.fit(typed(full), full["label"])  # 'size' reaches LogisticRegression as it is
    model = save(pipeline, tmp_path)
    argv = [str(model), "--train", str(write(train, tmp_path / "train.parquet"))]
    argv += ["--population", str(write(population, tmp_path / "pop.parquet"))]
    code, _, err = invoke(["audit", *argv, "--label-column", "label", "--quiet"], capsys)
    assert code == 2
    assert "feature column 'size' must be finite. Found nan at row" in err
    assert len(err.strip().splitlines()) == 1


# ------------------------------------------------------------- categories never seen


def test_xgboost_scores_a_category_it_never_saw_as_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train, population = records(ROWS, 15), records(ROWS, 16)
    seen = train[train["colour"] != "violet"]
    known = [colour for colour in COLOURS if colour != "violet"]

    def as_trained(frame: pd.DataFrame) -> pd.DataFrame:
        features = frame.drop(columns="label")
        features["colour"] = pd.Categorical(features["colour"]).set_categories(known)
        return features

    classifier = xgb.XGBClassifier(
        n_estimators=20, max_depth=4, enable_categorical=True, tree_method="hist",
        max_cat_to_onehot=1, n_jobs=1, random_state=0,
    )  # fmt: skip
    classifier.fit(as_trained(seen), seen["label"])
    model = tmp_path / "model.ubj"
    classifier.save_model(model)
    seen.to_csv(tmp_path / "train.csv", index=False)
    population.to_csv(tmp_path / "population.csv", index=False)
    document = audit_cli(model, tmp_path / "train.csv", tmp_path / "population.csv", capsys)
    unseen = int((population["colour"] == "violet").sum())
    assert unseen > 0
    # Refused before: "feature column 'colour' must hold categories the XGBoost model ...
    # was trained on". XGBoost scores the records whose colour it never saw as missing.
    assert_audit_matches(
        document, lambda frame: classifier.predict_proba(as_trained(frame)), seen, population
    )
    note = (
        f"{unseen:,} record(s) held a category the XGBoost model in model.ubj was not "
        f"trained on; each such value was scored as a missing value, as XGBoost scores it"
    )
    assert document["warnings"] == [note]


# ------------------------------------------------------------------- labels as text


def text_labels(rows: int, seed: int) -> pd.DataFrame:
    frame = records(rows, seed)
    frame["label"] = np.where(frame["label"] == 1, "yes", "no")
    return frame[["size", "weight", "label"]]


def test_lightgbm_trained_on_text_labels_audits_with_class_labels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train, population = text_labels(ROWS, 17), text_labels(ROWS, 18)
    classifier = lgb.LGBMClassifier(n_estimators=20, num_leaves=8, n_jobs=1, verbose=-1)
    classifier.fit(train[["size", "weight"]], train["label"])
    assert list(classifier.classes_) == ["no", "yes"]  # sorted, as LabelEncoder numbers them
    model = tmp_path / "model.txt"
    classifier.booster_.save_model(str(model))
    train.to_csv(tmp_path / "train.csv", index=False)
    population.to_csv(tmp_path / "population.csv", index=False)
    argv = ["audit", str(model), "--train", str(tmp_path / "train.csv")]
    argv += ["--population", str(tmp_path / "population.csv"), "--label-column", "label"]

    line = refused([*argv, "--quiet"], capsys)
    assert "the model file records no class labels: pass --class-labels" in line
    assert "--class-labels no,yes" in line

    line = refused([*argv, "--quiet", "--class-labels", "no,yes,maybe"], capsys)
    assert "model classes (those the model file records, or --class-labels) must number 2" in line

    out = tmp_path / "audit.json"
    options = ["--class-labels", "no,yes", "--method", "empirical", "--quiet", "--json", str(out)]
    code, _, err = invoke([*argv, *options], capsys)
    assert code == 0, err
    document: dict[str, Any] = json.loads(out.read_text())
    assert document["provenance"]["classes"] == ["no", "yes"]
    assert document["provenance"]["classes_from"] == "argument"

    def as_numbers(frame: pd.DataFrame) -> pd.DataFrame:
        return frame.assign(label=(frame["label"] == "yes").astype(int))

    assert_audit_matches(
        document,
        lambda frame: classifier.predict_proba(frame[["size", "weight"]]),
        as_numbers(train),
        as_numbers(population),
    )


def test_an_audit_many_manifest_names_the_class_labels_of_a_lightgbm_booster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The manifest's ``class_labels`` column is ``--class-labels`` for one model: without
    it the model is refused naming the column, with it the model audits as alone."""
    train, population = text_labels(ROWS, 17), text_labels(ROWS, 18)
    classifier = lgb.LGBMClassifier(n_estimators=20, num_leaves=8, n_jobs=1, verbose=-1)
    classifier.fit(train[["size", "weight"]], train["label"])
    classifier.booster_.save_model(str(tmp_path / "model.txt"))
    train.to_csv(tmp_path / "train.csv", index=False)
    population.to_csv(tmp_path / "population.csv", index=False)
    header = "model,train,population,label_column,strategy,class_labels\n"
    row = 'model.txt,train.csv,population.csv,label,{},"{}"\n'
    manifest = tmp_path / "manifest.csv"
    manifest.write_text(header + row.format("unnamed", "") + row.format("named", "no,yes"))
    out = tmp_path / "many.json"
    args = ["audit-many", str(manifest), "--jobs", "1", "--quiet", "--method", "empirical"]
    code, _, err = invoke([*args, "--json", str(out)], capsys)
    assert code == 3, err  # one model could not be audited; the other's result is kept
    models = {m["entry"]["strategy"]: m for m in json.loads(out.read_text())["models"]}
    assert "in an audit-many manifest, a class_labels column" in models["unnamed"]["error"]
    named = models["named"]["result"]
    assert named["provenance"]["classes"] == ["no", "yes"]

    alone = tmp_path / "alone.json"
    argv = ["audit", str(tmp_path / "model.txt"), "--train", str(tmp_path / "train.csv")]
    argv += ["--population", str(tmp_path / "population.csv"), "--label-column", "label"]
    argv += ["--class-labels", "no,yes", "--method", "empirical", "--quiet"]
    assert invoke([*argv, "--json", str(alone)], capsys)[0] == 0
    assert named["epsilon_star"] == json.loads(alone.read_text())["epsilon_star"]
