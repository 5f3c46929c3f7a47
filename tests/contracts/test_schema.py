"""Every JSON file the CLI writes holds to the JSON Schema shipped in epsstar/schemas/."""

from __future__ import annotations

import copy
import json
import re
import tomllib
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from jsonschema import Draft202012Validator

from epsstar.audit.output.result import SCHEMA_VERSION
from epsstar.cli import main
from epsstar.cli.exit_codes import EXIT_GATE_FAILED, EXIT_OK, EXIT_PARTIAL

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "fixtures" / "models"
LOSSES = ROOT / "fixtures" / "losses"
SCHEMAS = {
    "audit",
    "epsilon",
    "audit-many",
    "audit-training",
    "demo-results",
    "training",
    "text-training",
    "references",
}

Validate = Callable[[str, Any], None]


def _schema(name: str) -> dict[str, Any]:
    text = (resources.files("epsstar") / "schemas" / f"{name}.schema.json").read_text("utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


# --- the schema files ------------------------------------------------------------------------


def test_the_package_ships_one_schema_per_document() -> None:
    folder = resources.files("epsstar") / "schemas"
    names = {item.name for item in folder.iterdir() if item.name.endswith(".json")}
    assert names == {f"{name}.schema.json" for name in SCHEMAS}
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "schemas/*.schema.json" in package_data["package-data"]["epsstar"]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_schemas_are_draft_2020_12_and_versioned(name: str) -> None:
    from epsstar.training.results import SCHEMA_VERSION as TRAINING_VERSION

    schema = _schema(name)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)
    # The top level is closed: its key set is fixed and every key is required.
    assert False in (schema.get("additionalProperties"), schema.get("unevaluatedProperties"))
    required, properties = set(schema["required"]), set(schema["properties"])
    if "$ref" in schema:  # epsilon: the estimate's keys, plus schema_version
        assert schema["$ref"] == "#/$defs/result"
        required |= set(schema["$defs"]["result"]["required"])
        properties |= set(schema["$defs"]["result"]["properties"])
    assert required == properties
    from epsstar.training.runs.references import SCHEMA_VERSION as REFERENCES_VERSION
    from epsstar.training.text.results import TEXT_SCHEMA_VERSION

    version = {
        "training": TRAINING_VERSION,
        "text-training": TEXT_SCHEMA_VERSION,
        "references": REFERENCES_VERSION,
    }.get(name, SCHEMA_VERSION)
    assert schema["properties"]["schema_version"] == {"const": version}


# --- epsstar audit ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def audits(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``audit --json`` of the README's example (gate, tails) and of a parametric audit."""
    pytest.importorskip("onnxruntime")
    folder = tmp_path_factory.mktemp("audit")
    common = ["--label-column", "label", "--quiet"]
    gate = [
        "audit",
        str(MODELS / "multiclass_mlp.onnx"),
        "--train",
        str(MODELS / "multiclass_train.csv"),
        "--population",
        str(MODELS / "multiclass_population.parquet"),
        "--max-epsilon",
        "1",
        "--match-columns-by-position",
        "--json",
        str(folder / "gate.json"),
        *common,
    ]
    assert main(gate) == EXIT_GATE_FAILED
    parametric = [
        "audit",
        str(MODELS / "binary_logreg.onnx"),
        "--train",
        str(MODELS / "binary_train.csv"),
        "--population",
        str(MODELS / "binary_population.parquet"),
        "--method",
        "parametric",
        "--interval",
        "0.9",
        "--n-bootstrap",
        "20",
        "--json",
        str(folder / "parametric.json"),
        *common,
    ]
    assert main(parametric) == EXIT_OK
    return {name: _read(folder / f"{name}.json") for name in ("gate", "parametric")}


@pytest.mark.parametrize("case", ["gate", "parametric"])
def test_audit_json_holds_to_its_schema(
    audits: dict[str, Any], validate_json: Validate, case: str
) -> None:
    document = audits[case]
    assert document["schema_version"] == SCHEMA_VERSION
    validate_json("audit", document)


def test_the_audit_schema_checks_each_branch(audits: dict[str, Any]) -> None:
    gate, parametric = audits["gate"], audits["parametric"]
    # Both branches of the nullable fields occur in the two audits.
    assert gate["passed"] is False
    assert parametric["passed"] is None
    assert gate["epsilon_star_interval"] is None
    assert parametric["epsilon_star_interval"]["n_bootstrap"] == 20
    assert gate["fit"] == {}
    assert set(parametric["fit"]) == {"train", "population"}
    assert gate["tail_fit"] is not None
    assert parametric["tail_fit"] is None


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda d: d.update(surprise=1), "top level"),
        (lambda d: d.pop("epsilon_lower_bound"), "required key"),
        (lambda d: d.update(schema_version=1), "version"),
        (lambda d: d.update(passed="no"), "type"),
        (lambda d: d["empirical"].update(surprise=1), "closed nested result"),
        (lambda d: d["readings"]["tpr_at_fpr"][0].pop("tpr_bound"), "nested required key"),
        (lambda d: d["utility"]["population"].update(accuracy=None), "not nullable"),
        (lambda d: d.update(method="guess"), "enumerated"),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_the_audit_schema_rejects_what_the_contract_excludes(
    audits: dict[str, Any], validate_json: Validate, change: Callable[[Any], Any], where: str
) -> None:
    document = copy.deepcopy(audits["parametric"])
    change(document)
    with pytest.raises(AssertionError):
        validate_json("audit", document)


def test_audit_json_on_standard_output(
    validate_json: Validate, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("onnxruntime")
    argv = [
        "audit",
        str(MODELS / "binary_mlp.onnx"),
        "--train",
        str(MODELS / "binary_train.parquet"),
        "--population",
        str(MODELS / "binary_population.parquet"),
        "--label-column",
        "label",
        "--method",
        "empirical",
        "--json",
        "-",
        "--quiet",
    ]
    assert main(argv) == EXIT_OK
    validate_json("audit", json.loads(capsys.readouterr().out))


# --- epsstar epsilon -------------------------------------------------------------------------


def _epsilon(tmp_path: Path, *options: str) -> Any:
    out = tmp_path / "result.json"
    argv = [
        "epsilon",
        "--train-losses",
        str(LOSSES / "train.npy"),
        "--population-losses",
        str(LOSSES / "population.npy"),
        "--delta",
        "1e-5",
        *options,
        "--json",
        str(out),
    ]
    assert main(argv) == EXIT_OK  # the CLI prints warnings (a poor fit) and goes on
    return _read(out)


@pytest.mark.parametrize(
    "options",
    [(), ("--method", "parametric"), ("--method", "empirical", "--interval", "0.9")],
    ids=["default", "parametric", "empirical-interval"],
)
def test_epsilon_json_holds_to_its_schema(
    tmp_path: Path, validate_json: Validate, options: tuple[str, ...]
) -> None:
    if "--interval" in options:
        options = (*options, "--n-bootstrap", "20")
    document = _epsilon(tmp_path, *options)
    assert document["schema_version"] == SCHEMA_VERSION
    validate_json("epsilon", document)


def test_epsilon_json_of_the_shape_tested_method_holds_to_its_schema(
    tmp_path: Path, validate_json: Validate
) -> None:
    """``--method tails-shape-tested`` on losses of the Gaussian mechanism's shape: its
    Gaussian-shift tails, named in the note, and their tail model in ``tail_fit``."""
    rng = np.random.default_rng(0)
    train, population = tmp_path / "train.npy", tmp_path / "population.npy"
    np.save(train, rng.normal(0.0, 1.0, 5000))
    np.save(population, rng.normal(0.5, 1.0, 5000))
    out = tmp_path / "result.json"
    argv = ["epsilon", "--train-losses", str(train), "--population-losses", str(population)]
    assert main([*argv, "--method", "tails-shape-tested", "--json", str(out)]) == EXIT_OK
    document = _read(out)
    validate_json("epsilon", document)
    assert document["method"] == "tails-shape-tested"
    assert "Gaussian-shift tails" in document["note"]
    assert document["tail_fit"]["train"]["family"] == "binormal-tails"


def test_the_documented_json_example_names_real_keys(tmp_path: Path) -> None:
    """docs/epsilon-from-losses.md's abridged ``--method parametric`` JSON: its keys exist and
    are in the schema."""
    guide = (ROOT / "docs" / "epsilon-from-losses.md").read_text()
    (block,) = re.findall(r"```json\n(.*?)\n```", guide, re.S)
    example = json.loads(block)
    written = _epsilon(tmp_path, "--method", "parametric")
    properties = _schema("epsilon")["$defs"]["result"]["properties"]
    assert example["schema_version"] == written["schema_version"] == SCHEMA_VERSION
    for key, value in example.items():
        assert key in written, key
        assert key == "schema_version" or key in properties, key
        if isinstance(value, dict) and "..." not in value:
            assert set(value) <= set(written[key]), key
    train_fit = example["fit"]["train"]
    assert set(train_fit) == set(written["fit"]["train"])
    assert set(train_fit["goodness_of_fit"]) == set(written["fit"]["train"]["goodness_of_fit"])


# --- epsstar audit-many ----------------------------------------------------------------------


def _manifest(folder: Path, models: list[tuple[str, str, int]]) -> Path:
    lines = ["model,train,population,label_column,strategy,repeat,epochs"]
    for model, strategy, repeat in models:
        lines.append(
            f"{model},{MODELS / 'binary_train.csv'},{MODELS / 'binary_population.parquet'},"
            f"label,{strategy},{repeat},3"
        )
    path = folder / "manifest.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_audit_many_partial_failure_exits_3_and_holds_to_its_schema(
    tmp_path: Path, validate_json: Validate, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("onnxruntime")
    manifest = _manifest(
        tmp_path,
        [
            (str(MODELS / "binary_logreg.onnx"), "logreg", 0),
            (str(tmp_path / "missing.onnx"), "logreg", 1),
        ],
    )
    out = tmp_path / "results" / "many.json"
    out.parent.mkdir()
    argv = ["audit-many", str(manifest), "--jobs", "1", "--quiet", "--json", str(out)]
    code = main([*argv, "--reports", str(tmp_path / "results" / "reports")])
    assert code == EXIT_PARTIAL
    captured = capsys.readouterr()
    assert "FAILED" in captured.err
    document = _read(out)
    validate_json("audit-many", document)
    audited, failed = document["models"]
    assert set(audited) == {"entry", "result", "warnings", "report"}
    assert audited["report"] == "reports/logreg-0.html"
    assert (out.parent / audited["report"]).is_file()
    assert set(failed) == {"entry", "error"}
    assert "no such file" in failed["error"]
    assert (document["n_models"], document["n_failed"]) == (2, 1)
    (summary,) = document["strategies"]
    assert (summary["n_models"], summary["n_failed"]) == (2, 1)
    assert summary["epsilon_star_min"] == audited["result"]["epsilon_star"]


def test_audit_many_gate_exit_codes(tmp_path: Path, validate_json: Validate) -> None:
    pytest.importorskip("onnxruntime")
    manifest = _manifest(tmp_path, [(str(MODELS / "binary_logreg.onnx"), "logreg", 0)])
    out = tmp_path / "many.json"
    argv = ["audit-many", str(manifest), "--jobs", "1", "--quiet", "--json", str(out)]
    assert main([*argv, "--max-epsilon", "100", "--match-columns-by-position"]) == EXIT_OK
    crossfit = ["--gate", "estimate", "--method", "tails-crossfit"]
    assert (
        main([*argv, "--max-epsilon", "0", "--match-columns-by-position", *crossfit])
        == EXIT_GATE_FAILED
    )
    document = _read(out)
    validate_json("audit-many", document)
    assert document["gate"] == "estimate"
    assert document["n_above_gate"] == 1
    assert document["models"][0]["result"]["passed"] is False


def test_a_model_record_needs_a_result_or_an_error(validate_json: Validate) -> None:
    entry = {
        "model": "m.onnx",
        "train": "t.csv",
        "population": "p.csv",
        "label_column": "label",
        "strategy": "s",
        "repeat": 0,
        "params": {},
    }
    document = {
        "schema_version": SCHEMA_VERSION,
        "manifest": "manifest.csv",
        "max_epsilon": None,
        "gate": "significant",
        "engine": {"name": "single"},
        "n_models": 1,
        "n_failed": 1,
        "n_above_gate": 0,
        "strategies": [],
        "models": [{"entry": entry, "error": "broken"}],
    }
    validate_json("audit-many", document)
    document["models"] = [{"entry": entry}]
    with pytest.raises(AssertionError):
        validate_json("audit-many", document)
