"""What a release gate tells a CI pipeline: JUnit XML, GitHub's job summary and
annotations, --warn-only and limits from a reviewed file (issue 29; docs/ci.md)."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

import pytest

from epsstar.audit.output.gate_checks import GateCheck, ModelFigures
from epsstar.cli.common.pipeline import (
    GatedModel,
    GatedRun,
    annotate,
    annotation_lines,
    junit_text,
    step_summary_markdown,
)
from tests.conftest import invoke

MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "models"
FEATURES = "x0,x1,x2,x3,x4,x5,x6,x7"


FIGURES = ModelFigures(2.5, 1e-5, 1.25, 0.95, True)


def _run(warn_only: bool = False) -> GatedRun:
    checks = (
        GateCheck("m.onnx", "loss", None, "estimate", 2.5, 1.0),
        GateCheck("m.onnx", "lira", None, "estimate", 0.5, 1.0),
        GateCheck("m.onnx", "loss", "group=a", "estimate", None, 1.0),
    )
    models = (
        GatedModel(
            "m.onnx", checks, ("50% of rows, 100%: odd",), "r.html", "position", figures=FIGURES
        ),
        GatedModel("broken.onnx", error="cannot be read"),
    )
    return GatedRun(models, warn_only, "epsstar.toml")


def test_junit_xml_holds_a_case_per_check_and_the_failures_carry_the_numbers() -> None:
    root = ElementTree.fromstring(junit_text(_run()))
    (suite,) = root.findall("testsuite")
    counts = {key: suite.get(key) for key in ("tests", "failures", "errors", "skipped")}
    assert counts == {"tests": "4", "failures": "1", "errors": "1", "skipped": "1"}
    assert {key: root.get(key) for key in counts} == counts
    cases = suite.findall("testcase")
    names = [(case.get("classname"), case.get("name")) for case in cases]
    assert names == [
        ("epsstar.m.onnx", "attack loss"),
        ("epsstar.m.onnx", "attack lira"),
        ("epsstar.m.onnx", "attack loss, slice group=a"),
        ("epsstar.broken.onnx", "audit"),
    ]
    failure = cases[0].find("failure")
    assert failure is not None
    assert failure.get("message") == "Epsilon* 2.5000 above the limit 1; report: r.html"
    properties = {p.get("name"): p.get("value") for p in cases[0].iter("property")}
    assert properties["statistic_name"] == "Epsilon*"
    assert properties["lower_bound"] == "1.2500"
    assert properties["premise"] == "holds"
    assert cases[0].findtext("system-out") == (
        "Epsilon* 2.5000 at δ 1e-05, lower bound at 95% 1.2500, premise holds"
    )
    assert failure.text is not None
    assert "warning: 50% of rows" in failure.text
    assert cases[1].find("failure") is None
    assert cases[2].find("skipped") is not None
    error = cases[3].find("error")
    assert error is not None
    assert error.get("message") == "cannot be read"


def test_the_step_summary_gives_the_verdict_and_a_row_per_check() -> None:
    text = step_summary_markdown(_run())
    assert text.startswith("### epsstar release gate: FAIL\n\nLimits from `epsstar.toml`.")
    assert "| model | Epsilon* | δ | lower bound at 95% | premise (blind baseline) |" in text
    assert "| m.onnx | 2.5000 | 1e-05 | 1.2500 | holds |" in text
    assert "| m.onnx | attack loss | Epsilon* | 2.5000 | 1 | FAIL | r.html |" in text
    assert "| m.onnx | attack loss, slice group=a | Epsilon* | – | 1 | SKIPPED | r.html |" in text
    assert "- m.onnx: columns matched by position" in text
    assert "- broken.onnx: could not be audited: cannot be read" in text
    assert step_summary_markdown(_run(warn_only=True)).startswith(
        "### epsstar release gate: FAIL (warn-only: the job goes on)"
    )
    assert step_summary_markdown(GatedRun(())).startswith("### epsstar release gate: NO GATE")


def test_annotations_escape_what_github_reads_as_syntax(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = GatedRun((GatedModel("a:b,c.onnx", warnings=("100% odd\nsecond line",)),))
    (line,) = annotation_lines(run)
    # GitHub's workflow-command escapes: %, CR and LF everywhere; ':' and ',' in properties
    assert line == (
        "::warning file=a%3Ab%2Cc.onnx,title=epsstar%3A inputs::100%25 odd%0Asecond line"
    )
    lines = annotation_lines(_run())
    assert lines[0].startswith("::error file=m.onnx,title=epsstar release gate::m.onnx, attack")
    assert lines[0].endswith("(FAIL); report: r.html")
    assert [line.split(" ")[0] for line in lines] == ["::error", "::warning", "::error"]
    assert annotation_lines(_run(warn_only=True))[0].startswith("::warning ")
    annotate(_run(), {"GITHUB_ACTIONS": "false"})
    assert capsys.readouterr().out == ""
    annotate(_run(), {"GITHUB_ACTIONS": "true"})
    assert capsys.readouterr().out.splitlines() == lines


def _audit_args(tmp_path: Path, *extra: str) -> list[str]:
    return [
        "audit", str(MODELS / "multiclass_mlp.onnx"),
        "--train", str(MODELS / "multiclass_train.csv"),
        "--population", str(MODELS / "multiclass_population.parquet"),
        "--label-column", "label", "--quiet", "--json", str(tmp_path / "audit.json"),
        "--junit-xml", str(tmp_path / "junit.xml"), *extra,
    ]  # fmt: skip


def test_a_failing_gate_writes_junit_and_the_step_summary_and_annotates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fixture's multiclass MLP leaks (Epsilon* 2.52, tests/golden audit-readme): the
    file's limit for it (2) fails, in every output a pipeline reads."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "epsstar.toml").write_text(
        "max-epsilon = 10\n[[limits]]\nmodel = 'multiclass_*.onnx'\nmax-epsilon = 2\n"
    )
    summary = tmp_path / "summary.md"
    summary.write_text("## an earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    args = _audit_args(tmp_path, "--features", FEATURES, "--report", str(tmp_path / "r.html"))
    code, out, _ = invoke(args, capsys)
    assert code == 1
    assert "  limits (epsstar.toml): 1 check, 1 failed" in out
    (error,) = [line for line in out.splitlines() if line.startswith("::")]
    assert error.startswith("::error ")
    assert "2.5218 against the limit 2 (FAIL)" in error
    root = ElementTree.parse(tmp_path / "junit.xml").getroot()
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None
    significant = "Epsilon* (counted when the leak test finds a leak)"  # the default rule
    assert failure.get("message") == (
        f"{significant} 2.5218 above the limit 2; report: {tmp_path}/r.html"
    )
    text = summary.read_text()
    assert text.startswith("## an earlier step\n### epsstar release gate: FAIL\n")
    assert f"| {significant} | 2.5218 | 2 | FAIL |" in text
    assert "| model | Epsilon* | δ | lower bound at 95% | premise (blind baseline) |" in text

    # warn-only: the same outputs, a warning annotation, and exit 0
    code, out, _ = invoke([*args, "--warn-only"], capsys)
    assert code == 0
    assert "  warn-only: the gate failed; the exit code is 0" in out
    assert [line.split(" ")[0] for line in out.splitlines() if line.startswith("::")] == [
        "::warning"
    ]
    assert summary.read_text().count("FAIL (warn-only: the job goes on)") == 1


def test_without_a_limit_the_figures_pass_as_one_measured_case_and_fill_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No --max-epsilon and no file of limits: exit 0, one passing JUnit case that carries
    Epsilon*, the lower bound and the premise, and the same figures in the job summary."""
    monkeypatch.chdir(tmp_path)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code, _, err = invoke(_audit_args(tmp_path, "--features", FEATURES), capsys)
    assert code == 0, err
    audit = json.loads((tmp_path / "audit.json").read_text())
    root = ElementTree.parse(tmp_path / "junit.xml").getroot()
    assert root.get("tests") == "1"
    assert root.get("failures") == "0"
    (case,) = root.iter("testcase")
    assert case.get("name") == "measure"
    assert list(case) == [case.find("properties"), case.find("system-out")]
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert float(properties["epsilon_star"]) == pytest.approx(audit["epsilon_star"], abs=1e-4)
    assert float(properties["lower_bound"]) == pytest.approx(audit["epsilon_lower_bound"], abs=1e-4)
    premise = {True: "holds", False: "fails", None: "not checked"}[audit["premise_holds"]]
    assert properties["premise"] == premise
    assert f"Epsilon* {audit['epsilon_star']:.4f}" in (case.findtext("system-out") or "")
    text = summary.read_text()
    assert text.startswith("### epsstar release gate: NO GATE (no limit:")
    row = f"| {MODELS / 'multiclass_mlp.onnx'} | {audit['epsilon_star']:.4f} |"
    assert row in text
    assert f"| {audit['epsilon_lower_bound']:.4f} | {premise} |" in text


def test_a_limit_from_the_file_alone_refuses_columns_matched_by_position(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A gate set only in pyproject.toml is a gate: matching by position is refused (exit
    2) and nothing is written, the JUnit file among them."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    (tmp_path / "pyproject.toml").write_text("[tool.epsstar]\nmax-epsilon = 100\n")
    code, _, err = invoke(_audit_args(tmp_path), capsys)
    assert code == 2
    assert "Pass --features" in err
    assert "Traceback" not in err
    assert not (tmp_path / "junit.xml").exists()
    assert not (tmp_path / "audit.json").exists()


def test_an_unknown_key_is_refused_before_any_model_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "gate.toml"
    config.write_text("max-epsilon = 1\nwarn_only = true\n")
    args = _audit_args(tmp_path, "--config", str(config))
    args[1] = str(tmp_path / "no-such-model.onnx")  # never reached
    code, _, err = invoke(args, capsys)
    assert code == 2
    (line,) = err.strip().splitlines()
    assert line.endswith("has no key 'warn_only' (allowed: limits, max-epsilon, warn-only). "
                         "Found 'warn_only'.")  # fmt: skip
