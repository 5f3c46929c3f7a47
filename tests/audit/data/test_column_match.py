"""Columns reach a model by the names it records, whatever their order in the file.

A model fitted on a DataFrame audited with the same columns in another order must give the
same losses and Epsilon* (handing them over by position once turned 7.2 into 0.05); a model
without names gets them by position with a warning; ``--features`` overrides both.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from epsstar.audit.data.column_match import match_columns, match_model_columns, sanitised
from epsstar.audit.output.result import AuditResult
from epsstar.cli.main import main
from epsstar.exceptions import (
    ColumnOrderWarning,
    EpsstarWarning,
    InputFileError,
    InvalidInputError,
)
from tests.conftest import audit_files

NAMES = ["age", "education-num", "hours-per-week", "capital gain", "x4"]


def _frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """An overfitting task: few records, many weak features, labels partly noise."""
    rng = np.random.default_rng(3)
    scales = np.array([1.0, 5.0, 0.2, 30.0, 2.0])
    x = rng.normal(size=(600, 5)) * scales
    y = (x / scales) @ np.array([1.5, -1.0, 0.5, 2.0, -0.5]) + rng.normal(size=600) > 0
    frame = pd.DataFrame(x, columns=NAMES)
    frame["label"] = y.astype(int)
    return frame.iloc[:300].reset_index(drop=True), frame.iloc[300:].reset_index(drop=True)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    folder = tmp_path_factory.mktemp("columns")
    train, population = _frames()
    fitted = make_pipeline(StandardScaler(), LogisticRegression(C=100.0, max_iter=2000))
    fitted.fit(train[NAMES], train["label"])
    bare = LogisticRegression(C=100.0, max_iter=2000).fit(train[NAMES].to_numpy(), train["label"])
    paths = {"named": folder / "named.skops", "bare": folder / "bare.skops"}
    sio.dump(fitted, paths["named"])
    sio.dump(bare, paths["bare"])
    shuffled = ["label", "x4", "capital gain", "age", "hours-per-week", "education-num"]
    for role, frame in (("train", train), ("population", population)):
        paths[role] = folder / f"{role}.csv"
        frame.to_csv(paths[role], index=False)
        paths[f"{role}_shuffled"] = folder / f"{role}_shuffled.csv"
        frame[shuffled].to_csv(paths[f"{role}_shuffled"], index=False)
        renamed = frame.rename(columns={name: f"f{j}" for j, name in enumerate(NAMES)})
        paths[f"{role}_renamed"] = folder / f"{role}_renamed.csv"
        renamed.to_csv(paths[f"{role}_renamed"], index=False)
    return paths


def _audit(model: Path, train: Path, population: Path, **options: Any) -> AuditResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EpsstarWarning)
        return audit_files(model, train, population, label_column="label", seed=1, **options)


def test_a_named_model_gets_its_columns_by_name_in_any_file_order(
    files: dict[str, Path],
) -> None:
    in_order = _audit(files["named"], files["train"], files["population"])
    shuffled = _audit(files["named"], files["train_shuffled"], files["population_shuffled"])
    np.testing.assert_array_equal(in_order.train_losses, shuffled.train_losses)
    np.testing.assert_array_equal(in_order.population_losses, shuffled.population_losses)
    assert in_order.epsilon_star == shuffled.epsilon_star
    # The cross-fitted estimate before the leak test: the same, and far from 0.
    assert in_order.epsilon.untested_epsilon == shuffled.epsilon.untested_epsilon
    assert (in_order.epsilon.untested_epsilon or 0.0) > 0.1
    provenance = shuffled.provenance
    assert provenance.columns.source == "model names"
    assert list(provenance.columns.model_names) == NAMES
    assert shuffled.warnings == ()


def test_handing_the_shuffled_columns_over_by_position_would_have_been_wrong(
    files: dict[str, Path],
) -> None:
    """The guard is not vacuous: the shuffled file, fed in its own order, changes the losses."""
    shuffled = ["x4", "capital gain", "age", "hours-per-week", "education-num"]
    wrong = _audit(
        files["bare"], files["train_shuffled"], files["population_shuffled"], features=shuffled
    )
    right = _audit(files["bare"], files["train"], files["population"], features=NAMES)
    assert not np.allclose(wrong.train_losses, right.train_losses)
    assert wrong.provenance.columns.source == "features option"


def test_a_model_without_names_gets_columns_by_position_with_a_warning(
    files: dict[str, Path],
) -> None:
    with pytest.warns(ColumnOrderWarning, match="columns are matched by position: bare.skops"):
        result = audit_files(
            files["bare"], files["train"], files["population"], label_column="label", seed=1
        )
    assert result.provenance.columns.source == "position"
    assert any("matched by position" in line for line in result.warnings)
    assert result.gate_blocked is False


def test_features_name_the_files_columns_for_the_models_inputs(files: dict[str, Path]) -> None:
    renamed = [f"f{j}" for j in range(5)]
    by_option = _audit(
        files["named"], files["train_renamed"], files["population_renamed"], features=renamed
    )
    by_name = _audit(files["named"], files["train"], files["population"])
    np.testing.assert_array_equal(by_option.train_losses, by_name.train_losses)
    columns = by_option.provenance.to_dict()["columns"]
    assert columns[1] == {"file": "f1", "model": "education-num"}


def test_a_missing_column_is_refused_with_the_remedy(files: dict[str, Path]) -> None:
    with pytest.raises(InputFileError) as caught:
        audit_files(
            files["named"],
            files["train_renamed"],
            files["population_renamed"],
            label_column="label",
        )
    message = str(caught.value)
    assert "named.skops takes as its inputs (by name)" in message
    assert "--features" in message
    assert "missing 'age'" in message
    with pytest.raises(InvalidInputError, match="one column per input of named.skops"):
        audit_files(
            files["named"],
            files["train"],
            files["population"],
            label_column="label",
            features=["age"],
        )


def test_the_command_line_audits_shuffled_columns_alike(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    epsilons = []
    for suffix in ("", "_shuffled"):
        out = tmp_path / f"a{suffix}.json"
        code = main([
            "audit", str(files["named"]), "--train", str(files[f"train{suffix}"]),
            "--population", str(files[f"population{suffix}"]), "--label-column", "label",
            "--json", str(out), "--quiet", "--seed", "1",
        ])  # fmt: skip
        assert code in (0, 1), capsys.readouterr().err
        epsilons.append(json.loads(out.read_text())["epsilon_star"])
    assert epsilons[0] == epsilons[1]


def test_names_match_exactly_then_sanitised_then_in_any_case() -> None:
    model, data = Path("m.onnx"), Path("d.csv")
    available = ["Label", "EDUCATION-NUM", "age", "age_", "capital-gain"]
    match = match_columns(
        available,
        "Label",
        model_names=["age", "capital_gain", "education_num"],
        features=None,
        model=model,
        data=data,
    )
    assert match.file_columns == ("age", "capital-gain", "EDUCATION-NUM")
    assert match.model_names == ("age", "capital_gain", "education_num")
    assert sanitised("hours-per-week (h)") == "hours_per_week__h_"
    with pytest.raises(InputFileError, match="matching several inputs"):
        match_columns(
            ["a-b", "y"], "y", model_names=["a_b", "a-b"], features=None, model=model, data=data
        )
    position = match_columns(
        ["y", "b", "a"], "y", model_names=None, features=None, model=model, data=data
    )
    assert position.file_columns == ("b", "a")
    assert position.source == "position"
    assert position.position_warning(model) is not None
    single = match_columns(["y", "b"], "y", model_names=None, features=None, model=model, data=data)
    assert single.position_warning(model) is None


def test_a_gate_on_columns_matched_by_position_exits_2_naming_features(
    files: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The gate never passes on a guess: the shuffled file fed by position to a model that
    records no names would give a wrong Epsilon* that ``--max-epsilon`` could pass."""
    out = tmp_path / "gate.json"
    argv = [
        "audit", str(files["bare"]), "--train", str(files["train_shuffled"]),
        "--population", str(files["population_shuffled"]), "--label-column", "label",
        "--max-epsilon", "1000", "--json", str(out), "--quiet", "--seed", "1",
        # The blind rank test flags these 300 + 300 records by chance (p = 0.014 < 1/60, a
        # false alarm it is allowed); this test is about the columns, not the premise.
        "--no-blind-baseline", "the test is about column matching",
    ]  # fmt: skip
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    (line,) = [line for line in err.strip().splitlines() if "release gate" in line]
    assert "Pass --features" in line
    assert "--match-columns-by-position" in line
    assert line.endswith("Found 5 columns ('x4', 'capital gain', 'age', 'hours-per-week', "
                         "'education-num').")  # fmt: skip
    assert not out.exists()
    # stated by the user: the audit runs, and its outputs say how the columns were matched
    # before the result that rests on them
    assert main([*argv, "--match-columns-by-position"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("columns matched by position: the model records no names")
    assert printed[1].startswith("Epsilon* = ")
    document = json.loads(out.read_text())
    assert list(document)[:2] == ["schema_version", "columns_from"]
    assert document["columns_from"] == "position"
    # --features states the order: no refusal, and no position line
    features = "age,education-num,hours-per-week,capital gain,x4"
    assert main([*argv, "--features", features]) == 0
    assert capsys.readouterr().out.startswith("Epsilon* = ")
    assert json.loads(out.read_text())["columns_from"] == "features option"


def test_a_gate_on_named_columns_or_a_single_column_is_not_refused() -> None:
    match = match_columns(
        ["a", "label"], "label", model_names=None, features=None, model=Path("m"), data=Path("d")
    )
    match.refuse_guess(Path("m"), gate=True, by_position=False)  # one column: no order
    two = match_columns(
        ["a", "b", "label"], "label", model_names=None, features=None, model=Path("m"),
        data=Path("d"),
    )  # fmt: skip
    two.refuse_guess(Path("m"), gate=False, by_position=False)  # no gate
    two.refuse_guess(Path("m"), gate=True, by_position=True)  # stated
    with pytest.raises(InvalidInputError, match="Pass --features"):
        two.refuse_guess(Path("m"), gate=True, by_position=False)


@pytest.mark.parametrize(("n_names", "shown"), [(8, ""), (9, " and 1 more"), (12, " and 4 more")])
def test_a_refusal_names_the_first_eight_missing_columns(n_names: int, shown: str) -> None:
    """Every missing name up to eight, then how many more: the message stays one line."""
    names = [f"c{j}" for j in range(n_names)]
    with pytest.raises(InputFileError) as caught:
        match_columns(
            ["y", "other"], "y", model_names=names, features=None, model=Path("m"), data=Path("d")
        )
    listed = ", ".join(repr(name) for name in names[:8])
    assert f"missing {listed}{shown}. Found columns 'other'." in str(caught.value)


def test_a_loaded_model_is_matched_by_the_names_it_records_if_any() -> None:
    """``feature_names`` of a loaded model, when it has the attribute and it is not None."""

    class Named:
        feature_names = ("b", "a")

    class Unnamed:
        feature_names = None

    options = {"features": None, "model_path": Path("m.onnx"), "data": Path("d.csv")}
    named = match_model_columns(Named(), ["y", "a", "b"], "y", **options)
    assert (named.file_columns, named.source) == (("b", "a"), "model names")
    for model in (Unnamed(), object()):
        plain = match_model_columns(model, ["y", "a", "b"], "y", **options)
        assert (plain.file_columns, plain.source) == (("a", "b"), "position")
    with pytest.raises(InputFileError, match=r"^d\.csv: must have the columns m\.onnx takes"):
        match_model_columns(Named(), ["y", "a"], "y", **options)
