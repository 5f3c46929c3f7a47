"""``--group-by``, ``--attribute`` and ``--top-records`` of ``epsstar audit`` on the Adult
fixtures, and the bad inputs of each (one line, exit code 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from epsstar.cli import main
from epsstar.cli.exit_codes import EXIT_OK, EXIT_USAGE

ROOT = Path(__file__).resolve().parents[2]
KINDS = ROOT / "fixtures" / "models" / "kinds"
MODEL = KINDS / "adult_pipeline.skops"
ROWS = 1500


def _with_users(frame: pd.DataFrame, prefix: str, seed: int) -> pd.DataFrame:
    """``frame`` with a column ``user``: consecutive rows grouped 1 to 5 at a time."""
    sizes = np.random.default_rng(seed).integers(1, 6, size=len(frame))
    owner = np.repeat(np.arange(len(frame)), sizes)[: len(frame)]
    return frame.assign(user=[f"{prefix}{i}" for i in owner])


@pytest.fixture(scope="module")
def adult(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The first 1,500 rows of each Adult table, with a ``user`` column."""
    folder = tmp_path_factory.mktemp("adult")
    for side, seed in (("train", 0), ("population", 1)):
        frame = pd.read_csv(KINDS / f"adult_{side}.csv").head(ROWS)
        _with_users(frame, side[0], seed).to_csv(folder / f"{side}.csv", index=False)
    return folder


def _argv(folder: Path, *extra: str) -> list[str]:
    return [
        "audit",
        str(MODEL),
        "--train",
        str(folder / "train.csv"),
        "--population",
        str(folder / "population.csv"),
        "--label-column",
        "income",
        "--loss",
        "cross_entropy",
        *extra,
    ]


@pytest.fixture(scope="module")
def audited(adult: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Any, Path]:
    """One audit with all three options, its JSON and its report."""
    out = tmp_path_factory.mktemp("out")
    argv = _argv(adult, "--group-by", "user", "--attribute", "sex", "--top-records", "5")
    argv += ["--json", str(out / "audit.json"), "--report", str(out / "audit.html"), "--quiet"]
    code = main(argv)
    return code, json.loads((out / "audit.json").read_text()), out / "audit.html"


def test_user_level_epsilon_star_over_users(audited: tuple[int, Any, Path], adult: Path) -> None:
    code, document, _ = audited
    assert code == EXIT_OK
    users = document["user_level"]
    train = pd.read_csv(adult / "train.csv")
    population = pd.read_csv(adult / "population.csv")
    assert users["column"] == "user"
    assert users["attack"] == "loss"
    assert users["member_users"] == train["user"].nunique()
    assert users["nonmember_users"] == population["user"].nunique()
    counts = pd.concat([train["user"], population["user"]]).value_counts()
    assert users["records_per_user"] == {
        "min": int(counts.min()),
        "median": float(counts.median()),
        "max": int(counts.max()),
    }
    assert [a["aggregate"] for a in users["aggregates"]] == ["mean", "llr_sum"]
    for aggregate in users["aggregates"]:
        assert aggregate["epsilon_star"] >= aggregate["lower_bound"] >= 0
        assert 0 <= aggregate["auc"] <= 1


def test_user_level_mean_auc_matches_an_independent_computation(
    audited: tuple[int, Any, Path], adult: Path
) -> None:
    """The mean aggregate's AUC, recomputed from the per-record losses with pandas and
    scikit-learn (the losses recomputed from the model's probabilities)."""
    import skops.io as sio
    from sklearn.metrics import roc_auc_score

    _, document, _ = audited
    model = sio.load(MODEL, trusted=sio.get_untrusted_types(file=MODEL))
    means = []
    for side in ("train", "population"):
        frame = pd.read_csv(adult / f"{side}.csv")
        probabilities = model.predict_proba(frame.drop(columns=["income", "user"]))
        own = np.searchsorted(model.classes_, frame["income"].to_numpy())
        loss = -np.log(np.clip(probabilities[np.arange(len(frame)), own], 1e-300, None))
        means.append(pd.Series(loss).groupby(frame["user"].to_numpy()).mean().to_numpy())
    labels = np.r_[np.ones(means[0].size), np.zeros(means[1].size)]
    expected = roc_auc_score(labels, -np.r_[means[0], means[1]])
    mean = next(a for a in document["user_level"]["aggregates"] if a["aggregate"] == "mean")
    # 1e-6: the losses are computed by another route (float32 ONNX-free sklearn here);
    # a wrong grouping or orientation moves the AUC by far more.
    assert mean["auc"] == pytest.approx(expected, abs=1e-6)


def test_attribute_inference_on_sex(audited: tuple[int, Any, Path]) -> None:
    _, document, _ = audited
    inferred = document["attribute_inference"]
    assert inferred["column"] == "sex"
    assert inferred["values"] == ["Female", "Male"]
    assert inferred["members"] == inferred["nonmembers"] == ROWS
    advantage = inferred["accuracy_members"] - inferred["accuracy_nonmembers"]
    assert inferred["advantage"] == pytest.approx(advantage)
    assert inferred["epsilon"] >= inferred["lower_bound"] >= 0
    assert inferred["training_bound"] is None


def test_the_most_exposed_records_are_the_lowest_losses(
    audited: tuple[int, Any, Path], adult: Path
) -> None:
    import skops.io as sio

    _, document, report = audited
    exposed = document["exposed_records"]
    assert exposed["attack"] == "loss"
    rows = [r["row"] for r in exposed["records"]]
    assert len(rows) == 5
    model = sio.load(MODEL, trusted=sio.get_untrusted_types(file=MODEL))
    frame = pd.read_csv(adult / "train.csv")
    probabilities = model.predict_proba(frame.drop(columns=["income", "user"]))
    own = np.searchsorted(model.classes_, frame["income"].to_numpy())
    loss = -np.log(probabilities[np.arange(len(frame)), own])
    assert rows == list(np.lexsort((np.arange(loss.size), loss))[:5])
    html = report.read_text()
    assert 'id="exposed-table"' in html
    assert 'id="user-level-table"' in html
    assert 'id="attribute-inference"' in html
    assert 'id="premise-card"' in html


def _constant_race(folder: Path) -> None:
    for side in ("train", "population"):
        frame = pd.read_csv(folder / f"{side}.csv")
        frame.assign(race="White").to_csv(folder / f"{side}.csv", index=False)


def _smoker(folder: Path) -> None:
    """A column ``smoker`` (yes/no) that the model does not read."""
    for side in ("train", "population"):
        frame = pd.read_csv(folder / f"{side}.csv")
        smoker = np.where(np.arange(len(frame)) % 3 == 0, "yes", "no")
        frame.assign(smoker=smoker).to_csv(folder / f"{side}.csv", index=False)


def _shared_user(folder: Path) -> None:
    frame = pd.read_csv(folder / "population.csv")
    frame.loc[0, "user"] = "t0"
    frame.to_csv(folder / "population.csv", index=False)


BAD_INPUTS = [
    ("missing group column", ("--group-by", "person"), None, "'person'"),
    ("user on both sides", ("--group-by", "user"), _shared_user, "Found 't0' in both."),
    (
        "attribute with one value",
        ("--attribute", "race"),
        _constant_race,
        "must take at least two values to be inferred. Found only 'White'.",
    ),
    (
        "attribute not a model input",
        ("--attribute", "smoker"),
        _smoker,
        "must be one of the model's inputs",
    ),
    ("missing attribute column", ("--attribute", "religion"), None, "'religion'"),
    (
        "negative top records",
        ("--top-records", "-1"),
        None,
        "expected a whole number ≥ 0. Found '-1'.",
    ),
]


@pytest.mark.parametrize(
    ("options", "prepare", "message"),
    [case[1:] for case in BAD_INPUTS],
    ids=[case[0] for case in BAD_INPUTS],
)
def test_bad_input_is_one_line_and_exit_2(
    options: tuple[str, ...],
    prepare: Any,
    message: str,
    adult: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for side in ("train", "population"):
        (tmp_path / f"{side}.csv").write_bytes((adult / f"{side}.csv").read_bytes())
    if prepare is not None:
        prepare(tmp_path)
    argv = _argv(tmp_path, *options, "--json", str(tmp_path / "audit.json"), "--quiet")
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own errors
        code = int(str(exit_.code))
    err = capsys.readouterr().err
    assert code == EXIT_USAGE, err
    assert len(err.strip().splitlines()) == 1, err
    assert message in err
    assert not (tmp_path / "audit.json").exists()
