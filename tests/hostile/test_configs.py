"""Hostile configuration files: reference recipes, sweep files, audit-many manifests,
landscape results and ``--storage-options``, each built in tmp_path.

Each class of bad value (a wrong type, an infinite number, nesting 50,000 deep, an unknown
key, a list where one value is due, a network too large for memory, a count too large to
train) must stop the command before any work with one line that names the file and the
field and ends with the value found, exit code 2, and no output folder. A hypothesis fuzz
target feeds every parser random documents: the only outcomes allowed are a valid parse or
one :class:`~epsstar.exceptions.EpsstarError` with a one-line message.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from epsstar.audit.data.configs.manifest import read_manifest
from epsstar.audit.output.landscape_data import landscape, read_results
from epsstar.cli import main
from epsstar.exceptions import EpsstarError
from epsstar.plumbing.files.input_bounds import MAX_DEPTH
from epsstar.plumbing.files.schema import Table, Where, parse_json_object
from epsstar.statistics.summaries.loss_summary import (
    SummaryPlan,
    merge_summaries,
    summarise_losses,
)
from epsstar.training.runs.references import read_recipe
from epsstar.training.runs.sweep import load_sweep_config

DEEP = 50_000


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def _table(path: Path, n: int, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=["f0", "f1", "f2"])
    frame["label"] = (frame["f0"] + rng.normal(size=n) > 0).astype(int)
    frame.to_csv(path, index=False)
    return path


def _recipe(**changes: Any) -> dict[str, Any]:
    """A training.json as ``epsstar train`` writes it, cut to the keys a recipe reads."""
    document: dict[str, Any] = {
        "schema_version": 3,
        "data": {"feature_names": ["f0", "f1", "f2"], "classes": ["0", "1"]},
        "model": {"hidden": [4]},
        "hyperparameters": {"epochs": 1, "batch_size": 16, "lr": 0.01, "momentum": 0.9},
    }
    for dotted, value in changes.items():
        *parents, key = dotted.split("__")
        table = document
        for parent in parents:
            table = table[parent]
        table[key] = value
    return document


# --- reference recipes -------------------------------------------------------------------------

RECIPES: dict[str, tuple[str, str]] = {
    "hidden-as-text": (
        json.dumps(_recipe(model__hidden="64")),
        "model.hidden must be a list of at most 100 items, each an integer from 1 to 1000000. "
        "Found '64'.",
    ),
    "epochs-infinite": (
        json.dumps(_recipe(hyperparameters__epochs=math.inf)),
        "hyperparameters.epochs must be an integer from 1 to 1000000. Found inf.",
    ),
    "lr-nan": (
        json.dumps(_recipe(hyperparameters__lr=math.nan)),
        "hyperparameters.lr must be a finite number from 0 to 1e+06 (above 0). Found nan.",
    ),
    "momentum-a-list": (
        json.dumps(_recipe(hyperparameters__momentum=[0.9])),
        "hyperparameters.momentum must be a finite number from 0 to 1 (below 1). Found [0.9].",
    ),
    "width-a-boolean": (
        json.dumps(_recipe(model__hidden=[4, True])),
        "model.hidden[1] must be an integer from 1 to 1000000. Found True.",
    ),
    "nested-50000-deep": (
        '{"model": ' + "[" * DEEP + "]" * DEEP + "}",
        f"the top level must be nested at most {MAX_DEPTH} levels deep. Found more than "
        f"{MAX_DEPTH} levels.",
    ),
    "unknown-key": (
        json.dumps({**_recipe(), "hiden": [4]}),
        "the top level has no key 'hiden' (allowed: attribute_inference, data, device, files, "
        "fingerprint, history, hyperparameters, kind, model, privacy, private, schema_version, "
        "utility, versions, wall_time_seconds). Found 'hiden'.",
    ),
    "not-json": ("{'model': 1}", "must be JSON (Expecting property name enclosed in double"),
    "missing-hyperparameters": (
        json.dumps({"model": {"hidden": []}}),
        "missing hyperparameters. Found keys 'model'.",
    ),
    "feature-not-in-data": (
        json.dumps(_recipe(data__feature_names=["x", "f1", "f2"])),
        "the reference data must have every feature column of the target, as --recipe ",
    ),
}


@pytest.mark.parametrize("case", list(RECIPES))
def test_bad_recipe(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, expected = RECIPES[case]
    data = _table(tmp_path / "reference.csv", 200, seed=1)
    recipe = tmp_path / "training.json"
    recipe.write_text(text, encoding="utf-8")
    out = tmp_path / "refs"
    args = ["references", "--data", str(data), "--label-column", "label", "--recipe", str(recipe)]
    assert main([*args, "--count", "2", "--out", str(out), "--quiet"]) == 2
    message = _error(capsys)
    assert message.startswith("epsstar references: error: ")
    assert expected in message
    where = data if case == "feature-not-in-data" else recipe
    assert message.split(": error: ")[1].startswith(f"{where}: ")
    assert not out.exists()


def test_recipe_keys_are_those_of_training_json() -> None:
    """The recipe's declared keys follow epsstar/schemas/training.schema.json."""
    from epsstar.training.runs.references import RECIPE_SCHEMA

    root = Path(__file__).resolve().parents[2]
    schema = json.loads((root / "epsstar/schemas/training.schema.json").read_text())
    assert set(RECIPE_SCHEMA.fields) == set(schema["properties"])
    for part in ("data", "model", "hyperparameters"):
        table = RECIPE_SCHEMA.fields[part]
        assert isinstance(table, Table)
        assert set(table.fields) == set(schema["properties"][part]["properties"])


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--count", "1000000000"],
            "--count must be an integer from 1 to 1,000 reference models. Found 1000000000.",
        ),
        (["--count", "0"], "--count must be an integer from 1 to 1,000 reference models. Found 0."),
    ],
    ids=["count-huge", "count-zero"],
)
def test_reference_count_is_bounded(
    args: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _table(tmp_path / "reference.csv", 200, seed=1)
    out = tmp_path / "refs"
    command = ["references", "--data", str(data), "--label-column", "label", "--out", str(out)]
    assert main([*command, *args, "--quiet"]) == 2
    assert _error(capsys) == f"epsstar references: error: {expected}"
    assert not out.exists()


# --- networks too large for memory -------------------------------------------------------------


def test_a_network_too_large_for_memory_is_refused_before_it_is_built(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _table(tmp_path / "train.csv", 200, seed=1)
    out = tmp_path / "model"
    args = ["train", "--data", str(data), "--label-column", "label", "--epochs", "1"]
    assert main([*args, "--hidden", "200000,200000", "--out", str(out), "--quiet"]) == 2
    message = _error(capsys)
    assert message.startswith("epsstar train: error: the network (3 features, 1 output(s)) has ")
    assert "40,001,200,001 parameters" in message
    assert message.endswith("Found hidden [200000, 200000].")
    assert not out.exists()
    recipe = tmp_path / "training.json"
    recipe.write_text(json.dumps(_recipe(model__hidden=[200000, 200000])), encoding="utf-8")
    refs = tmp_path / "refs"
    command = ["references", "--data", str(data), "--label-column", "label"]
    assert main([*command, "--recipe", str(recipe), "--out", str(refs), "--quiet"]) == 2
    assert _error(capsys).endswith("Found hidden [200000, 200000].")
    assert not refs.exists()


# --- sweep files -------------------------------------------------------------------------------

SWEEP = {
    "data": "train.csv",
    "label_column": "label",
    "model": {"hidden": [4]},
    "baseline": {"epochs": [1], "batch_size": 16},
}

SWEEPS: dict[str, tuple[str, str, str]] = {
    "hidden-as-text": (
        "json",
        json.dumps({**SWEEP, "model": {"hidden": "64"}}),
        "model.hidden must be a list of at most 100 items, each an integer from 1 to 1000000. "
        "Found '64'.",
    ),
    "toml-infinite-lr": (
        "toml",
        'data = "train.csv"\nlabel_column = "label"\n[model]\nlr = inf\n[baseline]\nepochs = 1\n',
        "model.lr must be a finite number from 0 to 1e+06 (above 0). Found inf.",
    ),
    "json-nested-50000-deep": (
        "json",
        '{"data": ' + "[" * DEEP + "]" * DEEP + "}",
        f"must be nested at most {MAX_DEPTH} levels deep. Found more than {MAX_DEPTH} levels.",
    ),
    "toml-nested-50000-deep": (
        "toml",
        "data = " + "[" * DEEP + "]" * DEEP + "\n",
        f"must be nested at most {MAX_DEPTH} levels deep. Found more than {MAX_DEPTH} levels.",
    ),
    "grid-of-a-quadrillion": (
        "json",
        json.dumps(
            {
                **SWEEP,
                "dp": {
                    "target_epsilons": list(range(1, 1001)),
                    "clips": [1.0 + i for i in range(1000)],
                    "batch_sizes": list(range(1, 1001)),
                    "epochs": list(range(1, 1001)),
                },
            }
        ),
        "at most 100,000 are allowed. Found 1,000,000,000,001.",
    ),
    "unknown-table": (
        "json",
        json.dumps({**SWEEP, "modle": {}}),
        "the top level has no key 'modle' (allowed: baseline, data, dp, features, label_column, "
        "model, out, population, repeats, seed). Found 'modle'.",
    ),
    "repeats-a-float": (
        "json",
        json.dumps({**SWEEP, "repeats": 2.5}),
        "repeats must be an integer ≥ 1. Found 2.5.",
    ),
}


@pytest.mark.parametrize("case", list(SWEEPS))
def test_bad_sweep_file(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suffix, text, expected = SWEEPS[case]
    _table(tmp_path / "train.csv", 120, seed=1)
    config = tmp_path / f"sweep.{suffix}"
    config.write_text(text, encoding="utf-8")
    out = tmp_path / "models"
    assert main(["sweep", str(config), "--out", str(out), "--quiet"]) == 2
    message = _error(capsys)
    assert message.startswith(f"epsstar sweep: error: {config}: ")
    assert message.endswith(expected) or expected in message
    assert not out.exists()


# --- audit-many manifests ----------------------------------------------------------------------

MODEL_TOML = '[[models]]\nmodel = "m.onnx"\ntrain = "t.csv"\npopulation = "p.csv"\n'

MANIFESTS: dict[str, tuple[str, str]] = {
    "repeat-infinite": (
        'label_column = "label"\nrepeat = inf\n' + MODEL_TOML,
        "model 1: repeat must be an integer from 0 to 1000000000. Found inf.",
    ),
    "features-a-number": (
        'label_column = "label"\nfeatures = 3\n' + MODEL_TOML,
        "model 1: features must be a list of 1 to 1000000 items, each a non-empty text of at "
        "most 1024 characters. Found 3.",
    ),
    "loader-a-list": (
        'label_column = "label"\nloader = ["onnx"]\n' + MODEL_TOML,
        "model 1: loader must be a non-empty text of at most 1024 characters. Found ['onnx'].",
    ),
    "hyper-parameter-a-table": (
        'label_column = "label"\nlr = {a = {b = 1}}\n' + MODEL_TOML,
        "model 1: lr must be null, a text, a finite number, true/false or a list of at most "
        "1000 of them. Found a table with keys 'a'.",
    ),
    "nested-50000-deep": (
        "x = " + "[" * DEEP + "]" * DEEP + "\n" + MODEL_TOML,
        f"must be nested at most {MAX_DEPTH} levels deep. Found more than {MAX_DEPTH} levels.",
    ),
    "outputs-unknown": (
        'label_column = "label"\noutputs = "odds"\n' + MODEL_TOML,
        "model 1: outputs must be one of 'probabilities', 'logits'. Found 'odds'.",
    ),
}


@pytest.mark.parametrize("case", list(MANIFESTS))
def test_bad_manifest(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, expected = MANIFESTS[case]
    manifest = tmp_path / "m.toml"
    manifest.write_text(text, encoding="utf-8")
    report = tmp_path / "out.json"
    assert main(["audit-many", str(manifest), "--json", str(report)]) == 2
    message = _error(capsys)
    assert message.startswith(f"epsstar audit-many: error: {manifest}")
    assert message.endswith(expected)
    assert not report.exists()


def test_csv_manifest_cells_are_read_as_declared(tmp_path: Path) -> None:
    manifest = tmp_path / "m.csv"
    manifest.write_text(
        "model,train,population,label_column,repeat,features,lr,note\n"
        'm.onnx,t.csv,p.csv,label,3,"a, b",0.1,\n',
        encoding="utf-8",
    )
    (entry,) = read_manifest(manifest)
    assert (entry.repeat, entry.features, dict(entry.params)) == (3, ("a", "b"), {"lr": "0.1"})
    manifest.write_text(
        "model,train,population,label_column,repeat\nm.onnx,t.csv,p.csv,label,1e3\n",
        encoding="utf-8",
    )
    with pytest.raises(EpsstarError, match=r"row 2: repeat must be an integer .* Found '1e3'\.$"):
        read_manifest(manifest)


# --- landscape results and storage options -----------------------------------------------------

AUDITED = {"epsilon_star": 1.0, "utility": {"population": {"auroc": 0.6}}}

LANDSCAPES: dict[str, tuple[str, str]] = {
    "epsilon-negative": (
        json.dumps({**AUDITED, "epsilon_star": -3}),
        "result.epsilon_star of model 'r' #0 must be a finite number ≥ 0. Found -3.",
    ),
    "nested-50000-deep": (
        '{"models": ' + "[" * DEEP + "]" * DEEP + "}",
        f"must be nested at most {MAX_DEPTH} levels deep. Found more than {MAX_DEPTH} levels.",
    ),
    "repeat-infinite": (
        json.dumps({"models": [{"entry": {"strategy": "s", "repeat": 1e400}, "result": AUDITED}]}),
        "entry.repeat must be an integer from 0 to 1000000000. Found inf.",
    ),
    "params-a-table": (
        json.dumps(
            {"models": [{"entry": {"strategy": "s", "params": {"x": {"y": 1}}}, "result": AUDITED}]}
        ),
        "entry.params.x must be null, a text, a finite number, true/false or a list of at most "
        "1000 of them. Found a table with keys 'y'.",
    ),
}


@pytest.mark.parametrize("case", list(LANDSCAPES))
def test_bad_landscape_results(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text, expected = LANDSCAPES[case]
    results = tmp_path / "r.json"
    results.write_text(text, encoding="utf-8")
    out = tmp_path / "landscape"
    assert main(["landscape", str(results), "--out", str(out)]) == 2
    message = _error(capsys)
    assert message.startswith(f"epsstar landscape: error: {results}: ")
    assert message.endswith(expected)
    assert not out.exists()


def test_storage_options_nested_deep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = "[" * DEEP + "]" * DEEP
    args = ["audit", "m.onnx", "--train", "t.csv", "--population", "p.csv", "--label-column", "y"]
    with pytest.raises(SystemExit) as stopped:  # argparse's usage error, exit code 2
        main([*args, "--storage-options", deep])
    assert stopped.value.code == 2
    assert _error(capsys) == (
        "epsstar audit: error: argument --storage-options: the top level must be nested at "
        "most 16 levels deep. Found more than 16 levels."
    )


# --- Parquet columns of lists and tables -------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "column", "found"),
    [
        ("--slice-by", "tags", "Found array([0]) at row 0."),
        ("--slice-by", "meta", "Found {'a': 0} at row 0."),
        ("--label-column", "tags", "Found array([0]) at row 0."),
        ("--label-column", "meta", "Found {'a': 0} at row 0."),
    ],
    ids=["slice-by-list", "slice-by-struct", "label-list", "label-struct"],
)
def test_parquet_list_and_struct_columns(
    option: str, column: str, found: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(0)
    for name in ("train", "population"):
        frame = pd.DataFrame(rng.normal(size=(60, 2)), columns=["f0", "f1"])
        frame["label"] = (frame["f0"] > 0).astype(int)
        frame["tags"] = [[i % 3] for i in range(60)]
        frame["meta"] = [{"a": i % 2} for i in range(60)]
        frame.to_parquet(tmp_path / f"{name}.parquet")
    model = tmp_path / "model"
    train = ["train", "--data", str(tmp_path / "train.parquet"), "--label-column", "label"]
    assert (
        main(
            [
                *train,
                "--features",
                "f0,f1",
                "--epochs",
                "1",
                "--batch-size",
                "16",
                "--out",
                str(model),
            ]
        )
        == 0
    )
    capsys.readouterr()
    args = [str(model / "model.onnx"), "--features", "f0,f1"]
    args += ["--train", str(tmp_path / "train.parquet")]
    args += ["--population", str(tmp_path / "population.parquet")]
    label = column if option == "--label-column" else "label"
    extra = ["--slice-by", column] if option == "--slice-by" else []
    assert main(["audit", *args, "--label-column", label, *extra]) == 2
    message = _error(capsys)
    role = "slice_by" if option == "--slice-by" else "label"
    assert f"{role} column {column!r} must hold one number, boolean or text per row" in message
    assert message.endswith(found)


# --- fuzz: every parser, random documents ------------------------------------------------------

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
_KEYS = st.one_of(
    st.sampled_from(
        [
            "model",
            "hidden",
            "hyperparameters",
            "epochs",
            "batch_size",
            "lr",
            "momentum",
            "data",
            "feature_names",
            "classes",
            "label_column",
            "baseline",
            "dp",
            "repeats",
            "target_epsilons",
            "clips",
            "microbatches",
            "train",
            "population",
            "strategy",
            "repeat",
            "features",
            "loader",
            "outputs",
            "models",
            "entry",
            "result",
            "params",
            "epsilon_star",
            "utility",
            "auroc",
            "seed",
            "out",
        ]
    ),
    st.text(max_size=8),
)
_DOCUMENTS = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=5),
    max_leaves=25,
)


def _one_line_or_parse(parse: Callable[[], object]) -> None:
    """The property: a valid parse, or one EpsstarError with a one-line message."""
    try:
        parse()
    except EpsstarError as error:
        text = str(error)
        assert text, "an empty message"
        assert "\n" not in text, text
        assert "\r" not in text, text


def _toml(value: object) -> str:
    """TOML text for a random document (a test-side writer: no TOML writer is a dependency)."""
    if value is None:
        return '""'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return (
            "nan"
            if math.isnan(value)
            else ("inf" if value > 0 else "-inf")
            if (math.isinf(value))
            else repr(value)
        )
    if isinstance(value, int | str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"


_FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_FUZZ
@given(document=_DOCUMENTS, deep=st.integers(0, 3))
def test_fuzz_recipe(document: object, deep: int, tmp_path: Path) -> None:
    path = tmp_path / "training.json"
    text = json.dumps(document, allow_nan=True)
    path.write_text("[" * (deep * 40) + text + "]" * (deep * 40), encoding="utf-8")
    _one_line_or_parse(lambda: read_recipe(path))


@_FUZZ
@given(document=_DOCUMENTS, suffix=st.sampled_from(["json", "toml"]))
def test_fuzz_sweep_file(document: object, suffix: str, tmp_path: Path) -> None:
    path = tmp_path / f"sweep.{suffix}"
    if suffix == "json":
        text = json.dumps(document, allow_nan=True)
    elif isinstance(document, dict):
        text = "\n".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in document.items())
    else:
        text = f"x = {_toml(document)}"
    path.write_text(text, encoding="utf-8")
    _one_line_or_parse(lambda: load_sweep_config(path))


@_FUZZ
@given(defaults=st.dictionaries(_KEYS, _DOCUMENTS, max_size=4), models=_DOCUMENTS)
def test_fuzz_manifest(defaults: dict[str, object], models: object, tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    lines = [f"{json.dumps(k)} = {_toml(v)}" for k, v in defaults.items() if k != "models"]
    lines.append(f"models = {_toml(models)}")
    path.write_text("\n".join(lines), encoding="utf-8")
    _one_line_or_parse(lambda: read_manifest(path))


@_FUZZ
@given(cells=st.lists(st.lists(st.text(max_size=6), min_size=5, max_size=5), max_size=4))
def test_fuzz_csv_manifest(cells: list[list[str]], tmp_path: Path) -> None:
    import csv

    path = tmp_path / "m.csv"
    with path.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(["model", "train", "population", "label_column", "repeat"])
        writer.writerows(cells)
    _one_line_or_parse(lambda: read_manifest(path))


@_FUZZ
@given(document=_DOCUMENTS, utility=st.sampled_from(["auroc", "accuracy"]))
def test_fuzz_landscape_results(document: object, utility: str, tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(document, allow_nan=True), encoding="utf-8")
    _one_line_or_parse(lambda: landscape(read_results([path], utility=utility), utility=utility))


@_FUZZ
@given(document=_DOCUMENTS)
def test_fuzz_storage_options(document: object) -> None:
    text = json.dumps(document, allow_nan=True)
    _one_line_or_parse(lambda: parse_json_object(text, Where("--storage-options")))


_LOSSES = st.lists(
    st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(-1e300, 1e300)),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(
    parts=st.lists(
        st.tuples(_LOSSES, st.integers(1, 6), st.integers(1, 3), st.floats(0.0, 1.0)),
        max_size=3,
    ),
    seed=st.integers(0, 2**32),
)
def test_fuzz_loss_summary_merge(
    parts: list[tuple[list[float], int, int, float]], seed: int
) -> None:
    """Summaries of random losses (NaN, ±inf, huge) and plans, merged."""

    def merge() -> object:
        offset = 0
        summaries = []
        for losses, k, n_splits, rate in parts:
            plan = SummaryPlan(seed, 0, k, n_splits, rate)
            values = np.asarray(losses, dtype=np.float64)
            summaries.append(summarise_losses(values, plan, offset=offset))
            offset += values.size
        return merge_summaries(summaries)

    _one_line_or_parse(merge)
