"""What ``epsstar audit`` and ``epsstar epsilon`` conclude from valid-looking, suspect input.

Each case is built from scratch in ``tmp_path``: hand-written ONNX graphs whose outputs
are known, and CSV tables. A refused case exits 2 with one line and writes nothing; a
suspect one exits with one ``epsstar: warning:`` line per reason, kept in the JSON, and a
release gate never passes on it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from epsstar.audit.model.class_labels import FEATURES_KEY, features_to_text
from epsstar.cli import main

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

WIDTH = 4
FEATURES = [f"x{i}" for i in range(WIDTH)]


def _linear_onnx(
    path: Path, weights: Any, bias: Any, *, outputs: int = 1, head: str | None = None
) -> Path:
    """A model computing ``x @ weights + bias``, then ``head`` (Sigmoid, Softmax) if given."""
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.asarray(weights, np.float32).reshape(WIDTH, outputs), "W")
    b = numpy_helper.from_array(np.asarray(bias, np.float32).reshape(outputs), "B")
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["m"]),
        helper.make_node("Add", ["m", "B"], ["z"]),
    ]
    last = "z"
    if head is not None:
        extra = {"axis": 1} if head == "Softmax" else {}
        nodes.append(helper.make_node(head, ["z"], ["p"], **extra))
        last = "p"
    nodes.append(helper.make_node("Identity", [last], ["y"]))
    graph = helper.make_graph(
        nodes,
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, WIDTH])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, outputs])],
        [w, b],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    helper.set_model_props(model, {FEATURES_KEY: features_to_text(FEATURES)})
    onnx.save(model, str(path))
    return path


def _table(rows: int, seed: int, *, labels: str = "binary") -> pd.DataFrame:
    """Features and noisy labels of a linear rule; ``labels``: binary, ones, three, float."""
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(rows, WIDTH))
    label = (features.sum(axis=1) + rng.normal(size=rows) > 0).astype(int)
    frame = pd.DataFrame(features, columns=FEATURES)
    if labels == "ones":
        return frame.assign(label=1)
    if labels == "three":
        return frame.assign(label=rng.integers(0, 3, rows))
    if labels == "float":
        return frame.assign(label=label.astype(float))
    return frame.assign(label=label)


def _write(folder: Path, name: str, frame: pd.DataFrame) -> str:
    frame.to_csv(folder / name, index=False)
    return name


def _audit(folder: Path, model: str, train: str, population: str, *extra: str) -> list[str]:
    return [
        "audit",
        str(folder / model),
        "--train",
        str(folder / train),
        "--population",
        str(folder / population),
        "--label-column",
        "label",
        "--quiet",
        "--json",
        str(folder / "out.json"),
        *extra,
    ]


def _standard(folder: Path) -> None:
    """``logits.onnx`` (informative logits), ``train.csv`` and ``population.csv``."""
    _linear_onnx(folder / "logits.onnx", np.ones(WIDTH), [0.0])
    _write(folder, "train.csv", _table(400, 1))
    _write(folder, "population.csv", _table(200, 2))


# ----------------------------------------------------------------------------- refusals


def _same_path(folder: Path) -> list[str]:
    return _audit(
        folder,
        "logits.onnx",
        "train.csv",
        "train.csv",
        "--max-epsilon",
        "0.1",
        "--match-columns-by-position",
    )


def _same_content(folder: Path) -> list[str]:
    shutil.copy(folder / "train.csv", folder / "copy.csv")
    return _audit(
        folder,
        "logits.onnx",
        "train.csv",
        "copy.csv",
        "--max-epsilon",
        "0.1",
        "--match-columns-by-position",
    )


def _population_rows(rows: int) -> Callable[[Path], list[str]]:
    def build(folder: Path) -> list[str]:
        few = _write(folder, "few.csv", _table(rows, 3))
        return _audit(folder, "logits.onnx", "train.csv", few)

    return build


def _max_epsilon(value: str) -> Callable[[Path], list[str]]:
    def build(folder: Path) -> list[str]:
        return _audit(
            folder,
            "logits.onnx",
            "train.csv",
            "population.csv",
            f"--max-epsilon={value}",
            "--match-columns-by-position",
        )

    return build


def _half_labels(folder: Path) -> list[str]:
    frame = _table(200, 2)
    halves = _write(folder, "halves.csv", frame.assign(label=frame["label"] + 0.5))
    return _audit(folder, "logits.onnx", "train.csv", halves)


def _constant_predictions(folder: Path) -> list[str]:
    # zero scores: the same logits (exposed before the Softmax) for every record
    _linear_onnx(folder / "flat.onnx", np.zeros((WIDTH, 3)), [0, 0, 0], outputs=3, head="Softmax")
    _write(folder, "train3.csv", _table(400, 1, labels="three"))
    _write(folder, "population3.csv", _table(200, 2, labels="three"))
    return _audit(
        folder,
        "flat.onnx",
        "train3.csv",
        "population3.csv",
        "--max-epsilon",
        "1",
        "--match-columns-by-position",
    )


REFUSED = {
    "same-path": (_same_path, "must be different files", "train.csv' as both."),
    "same-content": (_same_content, "two files with the same content", "both with sha256"),
    "population-10-rows": (
        _population_rows(10),
        "population data need at least 100 rows for the tails-shape-tested estimate",
        "--method empirical needs 50. Found 10.",
    ),
    "population-60-rows": (
        _population_rows(60),
        "need at least 100 rows",
        "--method empirical needs 50, which these rows allow. Found 60.",
    ),
    "max-epsilon-negative": (
        _max_epsilon("-1"),
        "--max-epsilon must be in [0, inf)",
        "Found -1.0.",
    ),
    "max-epsilon-nan": (_max_epsilon("nan"), "--max-epsilon must be in [0, inf)", "Found nan."),
    "max-epsilon-inf": (_max_epsilon("inf"), "--max-epsilon must be in [0, inf)", "Found inf."),
    "labels-half-integers": (_half_labels, "labels must be classes of the model", "0.5, 1.5."),
    "constant-predictions": (_constant_predictions, "all losses are equal", "Epsilon* = 0"),
}


@pytest.mark.parametrize("case", list(REFUSED), ids=list(REFUSED))
def test_refused_input_is_one_line_exit_2_and_no_output(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _standard(tmp_path)
    build, problem, ending = REFUSED[case]
    code = main(build(tmp_path))
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert code == 2, captured.err
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("epsstar audit: error: ")
    assert problem in lines[0]
    assert ending in lines[0]
    assert "Traceback" not in captured.err + captured.out
    assert not (tmp_path / "out.json").exists()


def test_the_suggested_empirical_method_runs_on_60_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], validate_json: Callable[[str, Any], None]
) -> None:
    _standard(tmp_path)
    arguments = _population_rows(60)(tmp_path)
    assert main([*arguments, "--method", "empirical"]) == 0
    payload = json.loads((tmp_path / "out.json").read_text())
    validate_json("audit", payload)
    assert payload["method"] == "empirical"
    assert payload["n_population"] == 60
    assert "Traceback" not in capsys.readouterr().err


def test_epsilon_names_the_empirical_method_and_it_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(0)
    np.save(tmp_path / "train.npy", rng.normal(size=60))
    np.save(tmp_path / "population.npy", rng.normal(size=60))
    command = [
        "epsilon",
        "--train-losses",
        str(tmp_path / "train.npy"),
        "--population-losses",
        str(tmp_path / "population.npy"),
    ]
    assert main(command) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == (
        "epsstar epsilon: error: --train-losses needs at least 100 values for the "
        "tails-shape-tested method (--method empirical needs 1). Found 60."
    )
    assert main([*command, "--method", "empirical"]) == 0


# ----------------------------------------------------------------------------- warnings


def _single_class_both(folder: Path) -> list[str]:
    _write(folder, "train1.csv", _table(400, 1, labels="ones"))
    _write(folder, "population1.csv", _table(200, 2, labels="ones"))
    return _audit(folder, "logits.onnx", "train1.csv", "population1.csv")


def _single_class_train(folder: Path) -> list[str]:
    _write(folder, "train1.csv", _table(400, 1, labels="ones"))
    return _audit(folder, "logits.onnx", "train1.csv", "population.csv")


def _shared_rows(share: int) -> Callable[[Path], list[str]]:
    """A population of 200 rows, ``share`` of them copied from the training data."""

    def build(folder: Path) -> list[str]:
        mixed = pd.concat([_table(400, 1).iloc[:share], _table(200 - share, 2)])
        _write(folder, "mixed.csv", mixed)
        return _audit(folder, "logits.onnx", "train.csv", "mixed.csv")

    return build


def _skewed_population(folder: Path) -> list[str]:
    """180 records of class 1 and 20 of class 0, against a balanced training set."""
    frame = _table(600, 2)
    skewed = pd.concat(
        [frame[frame["label"] == 1].iloc[:180], frame[frame["label"] == 0].iloc[:20]]
    )
    _write(folder, "skewed.csv", skewed)
    return _audit(folder, "logits.onnx", "train.csv", "skewed.csv")


def _bounded_outputs(folder: Path) -> list[str]:
    # Outputs within (-0.5, 0.5) even on the probe's inputs scaled x100.
    _linear_onnx(folder / "bounded.onnx", np.full(WIDTH, 1e-3), [0.0])
    return _audit(folder, "bounded.onnx", "train.csv", "population.csv")


def _sigmoid_rows(folder: Path) -> list[str]:
    _linear_onnx(
        folder / "sigmoids.onnx", np.eye(WIDTH)[:, :3], [0, 0, 0], outputs=3, head="Sigmoid"
    )
    _write(folder, "train3.csv", _table(400, 1, labels="three"))
    _write(folder, "population3.csv", _table(200, 2, labels="three"))
    return _audit(folder, "sigmoids.onnx", "train3.csv", "population3.csv")


SINGLE = "labels hold a single class (1, all "
GATE = "the release gate fails"
WARNED = {
    "single-class-both": (_single_class_both, [f"training {SINGLE}400", f"population {SINGLE}200"]),
    "single-class-training": (_single_class_train, [f"training {SINGLE}400 rows)"]),
    "shared-rows-30%": (
        _shared_rows(60),
        ["60 of the 200 population rows (30.0%) also occur in the training data"],
    ),
    "class-mix": (
        _skewed_population,
        ["of the population rows: the population is not a sample"],
    ),
    "outputs-within-half": (
        _bounded_outputs,
        ["read as logits: a value on the detection probe is outside [0, 1]"],
    ),
    "sigmoid-rows": (_sigmoid_rows, ["read as logits: every value on the detection probe"]),
}


# Warnings that can hide a leak fail a gate; a different class mix is only reported.
GATE_BLOCKERS = set(WARNED) - {"class-mix"}


@pytest.mark.parametrize("case", list(WARNED), ids=list(WARNED))
@pytest.mark.parametrize("gate", [False, True], ids=["no-gate", "gate"])
def test_suspect_input_warns_in_one_line_each_and_fails_the_gate(
    case: str,
    gate: bool,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    validate_json: Callable[[str, Any], None],
) -> None:
    _standard(tmp_path)
    build, expected = WARNED[case]
    # a limit no Epsilon* of these data reaches: only the warnings can fail it
    code = main(
        [
            *build(tmp_path),
            *(["--max-epsilon", "1000", "--match-columns-by-position"] if gate else []),
        ]
    )
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    warned = captured.err.splitlines()
    assert all(line.startswith("epsstar: warning: ") for line in warned), captured.err
    blocks = case in GATE_BLOCKERS
    expected = [*expected, GATE] if gate and blocks else expected
    assert len(warned) == len(expected), captured.err
    for line, part in zip(warned, expected, strict=True):
        assert part in line
    payload = json.loads((tmp_path / "out.json").read_text())
    validate_json("audit", payload)
    assert payload["warnings"] == [line.removeprefix("epsstar: warning: ") for line in warned]
    # A gate on data whose premise fails (the blind baseline tells the tables apart) exits 4.
    premise_fails = payload["premise_holds"] is False
    assert code == (4 if gate and premise_fails else 1 if gate and blocks else 0)
    assert ("warnings about the inputs]" in captured.out) is (gate and blocks)
    assert payload["passed"] is ((not blocks) if gate else None)


def test_the_ambiguous_reading_names_the_option_and_the_option_settles_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], validate_json: Callable[[str, Any], None]
) -> None:
    _standard(tmp_path)
    arguments = _sigmoid_rows(tmp_path)
    assert main(arguments) == 0
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "rows do not sum to 1 (found a row summing to" in line
    assert "pass --outputs logits or --outputs probabilities" in line
    reading = json.loads((tmp_path / "out.json").read_text())["output_reading"]
    assert reading["kind"] == "logits"
    assert reading["source"] == "detected"
    assert reading["ambiguous"] is True
    assert (
        main(
            [
                *arguments,
                "--outputs",
                "logits",
                "--max-epsilon",
                "1000",
                "--match-columns-by-position",
            ]
        )
        == 0
    )
    assert "warning" not in capsys.readouterr().err
    payload = json.loads((tmp_path / "out.json").read_text())
    validate_json("audit", payload)
    assert payload["output_reading"]["source"] == "requested"
    assert payload["warnings"] == []
    assert payload["passed"] is True


def test_a_clear_reading_is_recorded_without_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _standard(tmp_path)
    _linear_onnx(tmp_path / "sigmoid.onnx", np.ones(WIDTH), [0.0], head="Sigmoid")
    assert main(_audit(tmp_path, "sigmoid.onnx", "train.csv", "population.csv")) == 0
    assert "warning" not in capsys.readouterr().err
    reading = json.loads((tmp_path / "out.json").read_text())["output_reading"]
    assert reading == {  # the ONNX loader reads the scores before the Sigmoid
        "kind": "logits",
        "source": "loader",
        "reason": "the scores before the final Sigmoid of output 'y', exposed from the graph "
        "in float64; on the detection probe they reproduce its probabilities within 1e-05",
        "ambiguous": False,
    }
    assert main(_audit(tmp_path, "logits.onnx", "train.csv", "population.csv")) == 0
    reading = json.loads((tmp_path / "out.json").read_text())["output_reading"]
    assert reading["kind"] == "logits"
    assert reading["ambiguous"] is False
    assert reading["reason"].startswith("a value on the detection probe is outside [0, 1]")


def test_a_few_shared_rows_are_chance_and_are_counted_without_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _standard(tmp_path)
    # 2 of 200 rows (1 %) is at the threshold, not above it
    assert (
        main([*_shared_rows(2)(tmp_path), "--max-epsilon", "1000", "--match-columns-by-position"])
        == 0
    )
    assert "warning" not in capsys.readouterr().err
    payload = json.loads((tmp_path / "out.json").read_text())
    assert payload["provenance"]["shared_rows"] == 2
    assert payload["passed"] is True


def test_whole_number_float_labels_audit_as_integers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _standard(tmp_path)
    assert main(_audit(tmp_path, "logits.onnx", "train.csv", "population.csv")) == 0
    integers = json.loads((tmp_path / "out.json").read_text())
    _write(tmp_path, "floats.csv", _table(200, 2, labels="float"))
    assert main(_audit(tmp_path, "logits.onnx", "train.csv", "floats.csv")) == 0
    floats = json.loads((tmp_path / "out.json").read_text())
    assert "warning" not in capsys.readouterr().err
    assert floats["epsilon_star"] == integers["epsilon_star"]
    assert floats["provenance"]["classes"] == ["0", "1"]


def test_shared_rows_are_found_across_formats_and_label_spellings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rows read as float64 from CSV and as float32 from Parquet, labelled 1 and 1.0."""
    _standard(tmp_path)
    train = _table(400, 1)
    shared = train.iloc[:100].astype(dict.fromkeys(FEATURES, np.float32))
    mixed = pd.concat([shared.assign(label=shared["label"].astype(float)), _table(100, 2)])
    mixed.to_parquet(tmp_path / "mixed.parquet", index=False)
    assert main(_audit(tmp_path, "logits.onnx", "train.csv", "mixed.parquet")) == 0
    assert "100 of the 200 population rows (50.0%)" in capsys.readouterr().err
    payload = json.loads((tmp_path / "out.json").read_text())
    assert payload["provenance"]["shared_rows"] == 100
