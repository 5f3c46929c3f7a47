"""The table the trainer's standardiser is fitted on: the population, the data or none, the
refusal of DP training with neither a population nor a choice, and what training.json and the
summary say of it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from epsstar.cli import main
from epsstar.exceptions import InvalidInputError
from epsstar.training.batched import RowSubset, train_many
from epsstar.training.data.tables import TabularData
from epsstar.training.models import ExportedModel
from epsstar.training.runs.fingerprint import data_fingerprint, fingerprint
from epsstar.training.runs.references import read_recipe, train_references
from epsstar.training.runs.sweep_config import load_sweep_config
from epsstar.training.trainer import TrainingConfig, train
from tests.training.conftest import make_table

DP = TrainingConfig(epochs=1, batch_size=100, hidden=(4,), noise_multiplier=1.0, seed=3)
REFUSAL = (
    "DP training standardises its features on public data, never on the private training "
    "records: give a population table (--population), or say --standardise-on data (outside "
    "the guarantee) or none. Found neither."
)


@pytest.fixture(scope="module")
def population() -> TabularData:
    """Another draw with the binary table's columns and classes, shifted and scaled apart
    from it, so that its mean and std are not the training table's."""
    table = make_table(700, 4, 2, seed=9)
    return dataclasses.replace(table, features=3.0 * table.features + 5.0, source="population")


def _moments(model: ExportedModel) -> tuple[np.ndarray, np.ndarray]:
    return model.standardiser.numpy()


def _expected(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and std as float32 numbers, the way the exported model holds them."""
    mean = torch.as_tensor(features.mean(axis=0), dtype=torch.float32).double().numpy()
    scale = torch.as_tensor(features.std(axis=0), dtype=torch.float32).double().numpy()
    return mean, scale


def test_dp_training_standardises_on_the_population_by_default(
    binary_table: TabularData, population: TabularData
) -> None:
    trained = train(binary_table, DP, population=population)
    mean, scale = _moments(trained.model)
    expected_mean, expected_scale = _expected(population.features)
    np.testing.assert_array_equal(mean, expected_mean)
    np.testing.assert_array_equal(scale, expected_scale)
    assert not np.allclose(mean, _expected(binary_table.features)[0])
    record = trained.result.to_dict()["model"]["standardisation"]
    assert record["fitted_on"] == "population"
    assert record["covered_by_guarantee"] is True
    assert record["description"].startswith("the mean and standard deviation of the population")


@pytest.mark.parametrize("with_population", [False, True], ids=["alone", "beside-a-population"])
def test_data_fits_the_training_table_outside_the_guarantee(
    binary_table: TabularData, population: TabularData, with_population: bool
) -> None:
    config = dataclasses.replace(DP, standardise_on="data")
    trained = train(binary_table, config, population=population if with_population else None)
    mean, scale = _moments(trained.model)
    expected_mean, expected_scale = _expected(binary_table.features)
    np.testing.assert_array_equal(mean, expected_mean)
    np.testing.assert_array_equal(scale, expected_scale)
    record = trained.result.model.standardisation
    assert (record.fitted_on, record.covered_by_guarantee) == ("data", False)


def test_none_is_the_identity(binary_table: TabularData) -> None:
    config = dataclasses.replace(DP, standardise_on="none")
    trained = train(binary_table, config)
    mean, scale = _moments(trained.model)
    np.testing.assert_array_equal(mean, np.zeros(binary_table.n_features))
    np.testing.assert_array_equal(scale, np.ones(binary_table.n_features))
    x = torch.as_tensor(binary_table.features[:5], dtype=torch.float32)
    assert torch.equal(trained.model.standardiser(x), x)
    record = trained.result.model.standardisation
    assert (record.fitted_on, record.covered_by_guarantee) == ("none", True)


def test_without_privacy_the_data_is_the_default_and_no_guarantee_is_claimed(
    binary_table: TabularData,
) -> None:
    config = dataclasses.replace(DP, noise_multiplier=None)
    record = train(binary_table, config).result.model.standardisation
    assert (record.fitted_on, record.covered_by_guarantee) == ("data", None)


def test_dp_training_without_a_population_or_a_choice_is_refused(
    binary_table: TabularData,
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        train(binary_table, DP)
    assert str(caught.value) == REFUSAL
    with pytest.raises(InvalidInputError, match=r"^--standardise-on population needs a popul"):
        train(binary_table, dataclasses.replace(DP, standardise_on="population"))
    with pytest.raises(InvalidInputError) as batched:
        train_many(binary_table, [DP, dataclasses.replace(DP, seed=4)])
    assert str(batched.value) == REFUSAL
    with pytest.raises(InvalidInputError, match=r"^standardise_on must be one of"):
        TrainingConfig(epochs=1, standardise_on="train")  # type: ignore[arg-type]


def test_the_batched_trainer_standardises_every_model_on_the_population(
    binary_table: TabularData, population: TabularData
) -> None:
    configs = [dataclasses.replace(DP, seed=seed) for seed in (1, 2)]
    halves = np.array_split(np.arange(binary_table.n_records), 2)
    subsets = [RowSubset(rows.astype(np.int64), f"half {k}") for k, rows in enumerate(halves)]
    models = train_many(binary_table, configs, subsets=subsets, population=population)
    expected_mean, _ = _expected(population.features)
    for model, config, subset in zip(models, configs, subsets, strict=True):
        np.testing.assert_array_equal(_moments(model.model)[0], expected_mean)
        alone = train(subset.of(binary_table), config, population=population)
        for a, b in zip(model.model.parameters(), alone.model.parameters(), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_naming_the_default_is_the_same_fingerprint(
    binary_table: TabularData, population: TabularData
) -> None:
    part = data_fingerprint(binary_table, population)
    named = fingerprint(dataclasses.replace(DP, standardise_on="population"), part)
    assert fingerprint(DP, part) == named
    assert fingerprint(dataclasses.replace(DP, standardise_on="data"), part) != named


def _cli(csv_files: tuple[Path, Path], out: Path, *extra: str) -> list[str]:
    return [
        "train",
        *("--data", str(csv_files[0]), "--label-column", "label", "--epochs", "1"),
        *("--noise-multiplier", "1", "--out", str(out), *extra),
    ]


def test_train_records_the_choice_and_says_when_it_is_outside_the_guarantee(
    csv_files: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    validate_json: Any,
) -> None:
    line = "  the standardisation is fitted on the training data, outside the guarantee"
    outside = tmp_path / "data"
    assert main(_cli(csv_files, outside, "--standardise-on", "data")) == 0
    assert line in capsys.readouterr().out.splitlines()
    document = json.loads((outside / "training.json").read_text("utf-8"))
    validate_json("training", document)
    assert document["model"]["standardisation"]["fitted_on"] == "data"
    assert document["model"]["standardisation"]["covered_by_guarantee"] is False
    inside = tmp_path / "population"
    assert main(_cli(csv_files, inside, "--population", str(csv_files[1]))) == 0
    assert "outside the guarantee" not in capsys.readouterr().out
    document = json.loads((inside / "training.json").read_text("utf-8"))
    validate_json("training", document)
    assert document["model"]["standardisation"]["fitted_on"] == "population"
    assert document["model"]["standardisation"]["covered_by_guarantee"] is True


def test_train_many_models_refuses_before_writing(
    csv_files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "many"
    assert main(_cli(csv_files, out, "--models", "2", "--quiet")) == 2
    err = capsys.readouterr().err
    assert err == f"epsstar train: error: {REFUSAL}\n"
    assert not out.exists()


def test_a_sweep_with_dp_and_no_population_is_refused_when_read(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep.toml"
    sweep.write_text(
        'data = "train.csv"\nlabel_column = "label"\n[dp]\ntarget_epsilons = [1]\nepochs = [1]\n',
        encoding="utf-8",
    )
    with pytest.raises(InvalidInputError) as caught:
        load_sweep_config(sweep)
    message = str(caught.value)
    assert message.startswith(f"{sweep}: DP training standardises its features on public data")
    assert message.endswith("(in a sweep file: 'population', or 'standardise_on' in [model])")
    sweep.write_text(
        sweep.read_text(encoding="utf-8") + '[model]\nstandardise_on = "none"\n', encoding="utf-8"
    )
    (strategy,) = load_sweep_config(sweep).strategies
    assert strategy.config.standardise_on == "none"


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"fitted_on": "population", "covered_by_guarantee": True}, "population"),
        ({"fitted_on": "none", "covered_by_guarantee": True}, "none"),
        ("mean/std of the training features, inside the exported model", "data"),
    ],
    ids=["population", "none", "older-text"],
)
def test_reference_models_follow_the_target_s_standardisation(
    binary_table: TabularData, tmp_path: Path, record: object, expected: str
) -> None:
    recipe_file = tmp_path / "training.json"
    hyper = {"epochs": 1, "batch_size": 50, "lr": 0.01, "momentum": 0.9}
    document = {"model": {"hidden": [], "standardisation": record}, "hyperparameters": hyper}
    recipe_file.write_text(json.dumps(document), encoding="utf-8")
    recipe = read_recipe(recipe_file)
    assert recipe.config.standardise_on == expected
    if expected != "population":
        return
    with pytest.raises(InvalidInputError, match=r"^the recipe's target standardised its feat"):
        train_references(binary_table, recipe, tmp_path / "refs", count=1)
    assert not (tmp_path / "refs").exists()
