"""CSV files as spreadsheets and pandas write them: ``;``-separated, and with pandas' index."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from epsstar.audit.data.tables import iter_batches, read_schema
from epsstar.cli import main
from epsstar.exceptions import InputFileError, InvalidInputError
from tests.conftest import audit_files

MODELS = Path(__file__).resolve().parents[3] / "fixtures" / "models"
MODEL = MODELS / "binary_logreg.onnx"


def written(tmp_path: Path, name: str, **to_csv: object) -> tuple[Path, Path]:
    """The fixture's training and population tables, written again with ``to_csv``."""
    paths = []
    for part in ("train", "population"):
        path = tmp_path / f"{name}_{part}.csv"
        pd.read_csv(MODELS / f"binary_{part}.csv").to_csv(path, **to_csv)
        paths.append(path)
    return paths[0], paths[1]


def test_a_semicolon_file_read_with_commas_is_refused_naming_the_option(tmp_path: Path) -> None:
    train, _ = written(tmp_path, "semi", sep=";", index=False)
    with pytest.raises(InputFileError) as caught:
        read_schema(train)
    message = str(caught.value)
    assert "\n" not in message
    assert "pass --csv-separator ';'" in message
    assert message.endswith("(9 fields if separated by ';').")


def test_a_tab_file_is_refused_naming_the_tab(tmp_path: Path) -> None:
    train, _ = written(tmp_path, "tabs", sep="\t", index=False)
    with pytest.raises(InputFileError, match=r"--csv-separator '\\t'"):
        read_schema(train)


def test_the_separator_reads_the_same_table(tmp_path: Path) -> None:
    semi, _ = written(tmp_path, "semi", sep=";", index=False)
    schema = read_schema(semi, separator=";")
    assert schema.columns == (*(f"x{i}" for i in range(8)), "label")
    (first, *_) = iter_batches(semi, label_column="label", separator=";")
    (expected, *_) = iter_batches(MODELS / "binary_train.csv", label_column="label")
    np.testing.assert_array_equal(first.features.matrix(), expected.features.matrix())
    np.testing.assert_array_equal(first.labels, expected.labels)


def test_an_audit_with_the_separator_matches_the_comma_file(tmp_path: Path) -> None:
    train, population = written(tmp_path, "semi", sep=";", index=False)
    keywords = {"label_column": "label", "columns_by_position": True}
    semi = audit_files(MODEL, train, population, csv_separator=";", **keywords)
    comma = audit_files(
        MODEL, MODELS / "binary_train.csv", MODELS / "binary_population.csv", **keywords
    )
    assert semi.epsilon_star == comma.epsilon_star
    np.testing.assert_array_equal(semi.train_losses, comma.train_losses)


@pytest.mark.parametrize("separator", ["", ";;", "a", "7", '"', "\n"])
def test_a_bad_separator_is_refused(separator: str) -> None:
    with pytest.raises(InvalidInputError, match=r"must be one character.*Found "):
        read_schema(MODELS / "binary_train.csv", separator=separator)


def _audit_command(train: Path, population: Path) -> list[str]:
    """``epsstar audit`` of the fixture model on ``train`` and ``population``, quiet."""
    return [
        "audit",
        str(MODEL),
        "--train",
        str(train),
        "--population",
        str(population),
        "--label-column",
        "label",
        "--quiet",
    ]


def test_the_command_line_reads_a_semicolon_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train, population = written(tmp_path, "semi", sep=";", index=False)
    command = _audit_command(train, population)
    assert main(command) == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error
    assert "--csv-separator ';'" in error
    assert main([*command, "--csv-separator", ";"]) == 0


def test_the_command_line_takes_tab_for_a_tab(tmp_path: Path) -> None:
    train, population = written(tmp_path, "tabs", sep="\t", index=False)
    assert main([*_audit_command(train, population), "--csv-separator", "\\t"]) == 0


def test_pandas_index_column_is_not_a_feature(tmp_path: Path) -> None:
    """``to_csv(path)`` writes the index first, under an empty name: a model taking the
    columns by position gets the 8 features, not the index as a ninth."""
    train, population = written(tmp_path, "indexed")
    assert train.read_text().startswith(",x0,")
    assert read_schema(train).columns == (*(f"x{i}" for i in range(8)), "label")
    indexed = audit_files(MODEL, train, population, "label", columns_by_position=True)
    plain = audit_files(
        MODEL,
        MODELS / "binary_train.csv",
        MODELS / "binary_population.csv",
        "label",
        columns_by_position=True,
    )
    np.testing.assert_array_equal(indexed.train_losses, plain.train_losses)


def test_a_named_first_column_stays_a_column(tmp_path: Path) -> None:
    path = tmp_path / "named.csv"
    path.write_text("id,x0,label\n0,1.5,1\n1,2.5,0\n")
    assert read_schema(path).columns == ("id", "x0", "label")


def test_the_dask_engine_refuses_another_separator_before_it_starts(tmp_path: Path) -> None:
    """The Dask engine reads comma-separated partitions only: said in one line, before any
    cluster starts (the address is never dialled)."""
    from epsstar.audit.engines.dask_engine import Engine

    train, population = written(tmp_path, "semi", sep=";", index=False)
    with pytest.raises(InvalidInputError) as caught:
        audit_files(
            MODEL,
            train,
            population,
            "label",
            csv_separator=";",
            engine=Engine("dask", "tcp://127.0.0.1:9"),
        )
    message = str(caught.value)
    assert "\n" not in message
    assert message.endswith("Found ';' with the dask engine.")


def test_the_premise_columns_are_read_with_the_separator(tmp_path: Path) -> None:
    """``--attribute`` and ``--group-by`` read their columns with the same separator."""
    from epsstar.audit.premise.attribute import read_attribute_values

    train, population = written(tmp_path, "semi", sep=";", index=False)
    with pytest.raises(InputFileError, match="--csv-separator"):
        read_attribute_values(train, population, "label")
    values = read_attribute_values(train, population, "label", separator=";").values
    assert sorted(int(value) for value in values) == [0, 1]
