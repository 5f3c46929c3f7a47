"""What a pipeline parses stays parseable whatever the inputs hold, and says what it must.

* Every character XML 1.0 forbids, in a model's file name, a slice's value or an
  ``audit-many`` strategy, reaches the JUnit XML, the job summary, the annotations and the
  HTML report escaped (:mod:`epsstar.audit.output.xml_text`): the JUnit file parses.
* With ``--json -`` standard output is the JSON alone: the annotations and the gate's
  lines (``warn-only: the gate failed``) go to standard error (GitHub reads workflow
  commands from both streams).
* Every combination of outputs, gate verdict and ``--warn-only``, for ``audit`` and
  ``audit-many``: the exit code, the annotation and the warn-only line where they belong.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pandas as pd
import pytest

from epsstar.audit.output.gate_checks import GateCheck
from epsstar.audit.output.xml_text import FORBIDDEN, xml_text
from epsstar.cli.common.pipeline import (
    GatedModel,
    GatedRun,
    annotation_lines,
    junit_text,
    step_summary_markdown,
)
from epsstar.cli.exit_codes import EXIT_GATE_FAILED, EXIT_OK, EXIT_USAGE
from tests.conftest import invoke

MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "models"

#: One of each class XML 1.0 forbids: C0 controls but tab, LF and CR; lone surrogates
#: (high, low, and what a file name that is not UTF-8 decodes to); U+FFFE and U+FFFF.
CONTROLS = "".join(chr(c) for c in (*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20)))
FORBIDDEN_TEXT = CONTROLS + "\ud800\udbff\udc80\udfff\ufffe\uffff"
WARN_ONLY_LINE = "warn-only: the gate failed; the exit code is 0"


def _parsed(text: str) -> ElementTree.Element:
    """The JUnit document, parsed by ElementTree and, where installed, by junitparser."""
    root = ElementTree.fromstring(text.encode("utf-8"))
    try:
        import junitparser
    except ImportError:
        return root
    document = junitparser.JUnitXml.fromstring(text.encode("utf-8"))
    assert sum(1 for suite in document for _ in suite) == len(root.findall(".//testcase"))
    return root


def _clean(text: str) -> None:
    assert FORBIDDEN.search(text) is None, repr(text)
    text.encode("utf-8")  # no lone surrogate left


def test_every_forbidden_character_is_escaped_visibly_and_the_rest_kept() -> None:
    escaped = xml_text(FORBIDDEN_TEXT)
    _clean(escaped)
    assert escaped.startswith("\\x00\\x01\\x02")
    assert escaped.endswith("\\ud800\\udbff\\udc80\\udfff\\ufffe\\uffff")
    kept = "tab\tline\nreturn\r é € 𝄞 \ud7ff \ue000 \ufffd"
    assert xml_text(kept) is kept


@pytest.mark.parametrize("character", list(FORBIDDEN_TEXT), ids=lambda c: f"U+{ord(c):04X}")
def test_each_forbidden_character_leaves_every_pipeline_output_parseable(character: str) -> None:
    name = f"model{character}.onnx"
    checks = (
        GateCheck(name, "loss", None, "estimate", 2.5, 1.0),
        GateCheck(name, "loss", f"group=a{character}b", "estimate", 0.5, 1.0),
    )
    run = GatedRun(
        (
            GatedModel(name, checks, (f"odd{character}value",), f"r{character}.html"),
            GatedModel(f"s{character}-0", error=f"cannot read {character}"),
        )
    )
    root = _parsed(junit_text(run))
    cases = root.findall(".//testcase")
    assert len(cases) == 3
    assert cases[0].get("classname") == f"epsstar.{xml_text(name)}"
    assert cases[1].get("name", "").endswith(xml_text(f"group=a{character}b"))
    for line in annotation_lines(run):
        _clean(line)
    _clean(step_summary_markdown(run))


def _inputs(folder: Path, model_name: str) -> tuple[Path, Path, Path]:
    """A model under ``model_name`` and tables with a slice column whose values hold
    control characters and U+FFFE/U+FFFF."""
    model = folder / model_name
    shutil.copy(MODELS / "multiclass_mlp.onnx", model)
    groups = np.array([f"a{CONTROLS[:16]}", f"b{CONTROLS[16:]}\ufffe\uffff"])
    tables = []
    for name, source in (
        ("train.parquet", "multiclass_train.csv"),
        ("population.parquet", "multiclass_population.parquet"),
    ):
        frame = (
            pd.read_csv(MODELS / source)
            if source.endswith(".csv")
            else pd.read_parquet(MODELS / source)
        )
        frame["group"] = groups[np.arange(len(frame)) % 2]
        frame.to_parquet(folder / name, index=False)
        tables.append(folder / name)
    return model, tables[0], tables[1]


def test_a_file_name_and_slice_values_with_forbidden_characters_audit_into_valid_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a name that is not UTF-8 (byte 0x80: a lone surrogate once decoded) and controls
    model_name = os.fsdecode(b"leaky\x01\x07\x1b\x80\xef\xbf\xbe.onnx")
    model, train, population = _inputs(tmp_path, model_name)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "limits.toml").write_text(
        "max-epsilon = 2\n[[limits]]\nslice = '*'\nmax-epsilon = 0.5\n", encoding="utf-8"
    )
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    code, out, err = invoke(
        [
            "audit", str(model), "--train", str(train), "--population", str(population),
            "--label-column", "label", "--slice-by", "group", "--config", "limits.toml",
            "--quiet", "--junit-xml", "gate.xml", "--report", "report.html",
            "--features", "x0,x1,x2,x3,x4,x5,x6,x7",
        ],
        capsys,
    )  # fmt: skip
    assert code == EXIT_GATE_FAILED, err
    root = _parsed((tmp_path / "gate.xml").read_bytes().decode("utf-8"))
    names = [case.get("name", "") for case in root.findall(".//testcase")]
    assert any("\\x01\\x02" in name for name in names), names
    assert any("\\ufffe\\uffff" in name for name in names), names
    assert {case.get("classname") for case in root.findall(".//testcase")} == {
        "epsstar." + xml_text(str(model))
    }
    _clean((tmp_path / "summary.md").read_bytes().decode("utf-8"))
    _clean((tmp_path / "report.html").read_bytes().decode("utf-8"))
    annotations = [line for line in out.splitlines() if line.startswith("::")]
    assert annotations
    assert any(line.startswith("::error ") for line in annotations)
    for line in annotations:
        _clean(line)


def test_an_audit_many_strategy_with_forbidden_characters_writes_valid_junit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("binary_logreg.onnx", "binary_train.csv", "binary_population.csv"):
        shutil.copy(MODELS / name, tmp_path / name)
    strategy = "s" + CONTROLS.replace("\x00", "") + "\ufffe"
    pd.DataFrame(
        {
            "strategy": [strategy, "missing"],
            "model": ["binary_logreg.onnx", "absent.onnx"],
            "train": ["binary_train.csv"] * 2,
            "population": ["binary_population.csv"] * 2,
            "label_column": ["label"] * 2,
        }
    ).to_csv(tmp_path / "manifest.csv", index=False)
    code, _, err = invoke(
        [
            "audit-many", str(tmp_path / "manifest.csv"), "--quiet", "--jobs", "1",
            "--max-epsilon", "5", "--match-columns-by-position",
            "--junit-xml", str(tmp_path / "gate.xml"),
        ],
        capsys,
    )  # fmt: skip
    if code == EXIT_USAGE:
        pytest.fail(err)
    root = _parsed((tmp_path / "gate.xml").read_bytes().decode("utf-8"))
    classnames = {case.get("classname") for case in root.findall(".//testcase")}
    assert f"epsstar.{xml_text(strategy)}-0" in classnames, classnames


# --------------------------------------------------------------------------- the matrix


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The leaking multiclass MLP (Epsilon* 2.52, tests/golden audit-readme), its data and a
    manifest of it, in a folder of their own."""
    folder = tmp_path_factory.mktemp("fleet")
    for name in ("multiclass_mlp.onnx", "multiclass_train.csv", "multiclass_population.parquet"):
        shutil.copy(MODELS / name, folder / name)
    (folder / "manifest.csv").write_text(
        "model,train,population,label_column\n"
        "multiclass_mlp.onnx,multiclass_train.csv,multiclass_population.parquet,label\n",
        encoding="utf-8",
    )
    return folder


OUTPUTS = ["--json -", "--json file", "--report", "none"]


def _output_args(output: str, folder: Path, command: str) -> list[str]:
    if output == "--json -":
        return ["--json", "-"]
    if output == "--json file":
        return ["--json", str(folder / "out.json")]
    if output == "--report":
        return ["--reports", str(folder / "reports")] if command == "audit-many" else [
            "--report", str(folder / "out.html")
        ]  # fmt: skip
    return []


@pytest.mark.parametrize("warn_only", [False, True], ids=["gate", "warn-only"])
@pytest.mark.parametrize("fails", [False, True], ids=["pass", "fail"])
@pytest.mark.parametrize("output", OUTPUTS)
@pytest.mark.parametrize("command", ["audit", "audit-many"])
def test_every_output_says_the_verdict_where_it_belongs(
    fleet: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    output: str,
    fails: bool,
    warn_only: bool,
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.chdir(tmp_path)
    limit = "2" if fails else "10"
    if command == "audit":
        words = [
            "audit", str(fleet / "multiclass_mlp.onnx"),
            "--train", str(fleet / "multiclass_train.csv"),
            "--population", str(fleet / "multiclass_population.parquet"),
            "--label-column", "label",
        ]  # fmt: skip
    else:
        words = ["audit-many", str(fleet / "manifest.csv"), "--jobs", "1"]
    words += ["--quiet", "--max-epsilon", limit, "--match-columns-by-position"]
    words += _output_args(output, tmp_path, command)
    words += ["--warn-only"] if warn_only else []
    code, out, err = invoke(words, capsys)
    if command == "audit-many" and output == "--json -":
        assert code == EXIT_USAGE
        assert err.strip().splitlines() == [
            "epsstar audit-many: error: --json must name a file ('-', standard output, is not "
            "available for it). Found '-'."
        ]
        return
    assert code == (EXIT_GATE_FAILED if fails and not warn_only else EXIT_OK), err
    assert "Traceback" not in err
    json_out = output == "--json -"
    if json_out:
        document = json.loads(out)  # standard output is the JSON, whole and alone
        assert document["passed"] is not fails
    said, other = (err, out) if json_out else (out, err)
    annotations = [line for line in said.splitlines() if line.startswith("::")]
    assert not any(line.startswith("::") for line in other.splitlines())
    if fails:
        kind = "::warning " if warn_only else "::error "
        assert [line.split(" ")[0] + " " for line in annotations] == [kind]
        assert "title=epsstar release gate::" in annotations[0]
    else:
        assert annotations == []
    assert (WARN_ONLY_LINE in said) is (fails and warn_only)
    assert WARN_ONLY_LINE not in other
