"""``epsstar audit-many`` writes the gate for a pipeline: JUnit XML and the job summary,
one test case per model and attack, a model that could not be audited as an error."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.conftest import invoke

MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "models"


def _manifest(tmp_path: Path) -> Path:
    """A leaking multiclass MLP (Epsilon* 2.52, tests/golden audit-readme), a binary
    logistic regression far below the limit 2, and a file that is no model."""
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not a model")
    rows = [
        ("mlp", 0, MODELS / "multiclass_mlp.onnx", "multiclass"),
        ("logreg", 0, MODELS / "binary_logreg.onnx", "binary"),
        ("broken", 0, broken, "binary"),
    ]
    lines = ["strategy,repeat,model,train,population,label_column"]
    for strategy, repeat, model, task in rows:
        lines.append(
            f"{strategy},{repeat},{model},{MODELS / f'{task}_train.csv'},"
            f"{MODELS / f'{task}_population.csv'},label"
        )
    manifest = tmp_path / "manifest.csv"
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return manifest


def test_a_failing_and_an_erroring_model_show_in_junit_and_the_step_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("## an earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    junit = tmp_path / "junit.xml"
    args = ["audit-many", str(_manifest(tmp_path)), "--jobs", "1", "--quiet"]
    args += ["--max-epsilon", "2", "--match-columns-by-position", "--junit-xml", str(junit)]
    args += ["--reports", str(tmp_path / "reports")]
    code, out, _ = invoke(args, capsys)
    assert code == 3  # a model could not be audited (the others' outputs are written)
    assert f"JUnit XML written to {junit}" in out

    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "1")
    cases = {case.get("classname"): case for case in suite.findall("testcase")}
    assert set(cases) == {"epsstar.mlp-0", "epsstar.logreg-0", "epsstar.broken-0"}
    failure = cases["epsstar.mlp-0"].find("failure")
    assert failure is not None
    report = tmp_path / "reports" / "mlp-0.html"
    significant = "Epsilon* (counted when the leak test finds a leak)"  # the default rule
    assert failure.get("message") == f"{significant} 2.5218 above the limit 2; report: {report}"
    assert report.is_file()
    logreg = cases["epsstar.logreg-0"]
    assert list(logreg) == [logreg.find("properties"), logreg.find("system-out")]
    error = cases["epsstar.broken-0"].find("error")
    assert error is not None
    assert "valid ONNX model" in (error.get("message") or "")

    text = summary.read_text(encoding="utf-8")
    assert text.startswith("## an earlier step\n### epsstar release gate: FAIL\n")
    assert f"| mlp-0 | attack loss | {significant} | 2.5218 | 2 | FAIL |" in text
    assert "| model | Epsilon* | δ | lower bound at 95% | premise (blind baseline) |" in text
    assert "| mlp-0 | 2.5218 |" in text
    assert "| logreg-0 | attack loss | " in text
    assert "| 2 | PASS |" in text
    assert "- broken-0: could not be audited: the model file must be a valid ONNX" in text


def test_without_a_limit_each_audited_model_passes_as_a_case_that_carries_its_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No --max-epsilon, no gate: each audited model is one passing ``measure`` case with
    its figures, the model that could not be audited an error; no --json is needed."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    junit = tmp_path / "junit.xml"
    args = ["audit-many", str(_manifest(tmp_path)), "--jobs", "1", "--quiet"]
    code, _, _ = invoke([*args, "--junit-xml", str(junit)], capsys)
    assert code == 3
    suite = ElementTree.parse(junit).getroot().find("testsuite")
    assert suite is not None
    counts = tuple(suite.get(key) for key in ("tests", "failures", "errors"))
    assert counts == ("3", "0", "1")
    cases = {case.get("classname"): case for case in suite.findall("testcase")}
    mlp = cases["epsstar.mlp-0"]
    assert (mlp.get("name"), mlp.find("failure")) == ("measure", None)
    properties = {p.get("name"): p.get("value") for p in mlp.iter("property")}
    assert properties["epsilon_star"] == "2.5218"
    assert float(properties["lower_bound"]) >= 0.0
    assert properties["lower_bound_confidence"] == "0.95"
    assert (mlp.findtext("system-out") or "").startswith("Epsilon* 2.5218 at δ ")
