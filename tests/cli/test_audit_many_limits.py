"""``epsstar audit-many`` reads the reviewed limits file (``--config``) and ``--warn-only``
as ``epsstar audit`` does: a limit per model, found by its path in the manifest."""

from __future__ import annotations

import shutil
from pathlib import Path
from xml.etree import ElementTree

import pytest

from tests.conftest import invoke

MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "models"


def _manifest(tmp_path: Path) -> Path:
    """The leaking multiclass MLP (Epsilon* 2.52, tests/golden audit-readme) under
    ``models/`` beside the manifest, named relatively, and a logistic regression far below."""
    (tmp_path / "models").mkdir()
    shutil.copy(MODELS / "multiclass_mlp.onnx", tmp_path / "models" / "mlp.onnx")
    rows = [
        ("mlp", "models/mlp.onnx", "multiclass"),
        ("logreg", MODELS / "binary_logreg.onnx", "binary"),
    ]
    lines = ["strategy,repeat,model,train,population,label_column"]
    for strategy, model, task in rows:
        lines.append(
            f"{strategy},0,{model},{MODELS / f'{task}_train.csv'},"
            f"{MODELS / f'{task}_population.csv'},label"
        )
    manifest = tmp_path / "manifest.csv"
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return manifest


def _run(
    tmp_path: Path, config: str, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str, str, dict[str, ElementTree.Element]]:
    limits = tmp_path / "epsstar.toml"
    limits.write_text(config, encoding="utf-8")
    junit = tmp_path / "junit.xml"
    args = ["audit-many", str(_manifest(tmp_path)), "--jobs", "1", "--quiet"]
    args += ["--match-columns-by-position", "--config", str(limits), "--junit-xml", str(junit)]
    code, out, err = invoke([*args, *extra], capsys)
    cases = {}
    if junit.exists():
        suite = ElementTree.parse(junit).getroot().find("testsuite")
        assert suite is not None
        cases = {str(case.get("classname")): case for case in suite.findall("testcase")}
    return code, out, err, cases


PER_MODEL = """
max-epsilon = 1.0
[[limits]]
model = "models/*.onnx"
max-epsilon = {limit}
"""


def test_a_model_limit_from_the_file_passes_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    code, out, _, cases = _run(tmp_path, PER_MODEL.format(limit=3.0), capsys)
    assert code == 0, out
    assert "0 of 2 audited models above their limits" in out
    assert cases["epsstar.mlp-0"].find("failure") is None


def test_a_model_limit_from_the_file_fails_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    code, out, _, cases = _run(tmp_path, PER_MODEL.format(limit=2.0), capsys)
    assert code == 1
    assert "1 of 2 audited models above their limits" in out
    failure = cases["epsstar.mlp-0"].find("failure")
    assert failure is not None
    message = failure.get("message") or ""
    assert message.startswith("Epsilon* (counted when the leak test finds a leak) 2.5218 above")
    # the default applies to the model the entry does not name
    assert cases["epsstar.logreg-0"].find("failure") is None


def test_warn_only_reports_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    code, out, _, cases = _run(tmp_path, PER_MODEL.format(limit=2.0), capsys, "--warn-only")
    assert code == 0
    assert "warn-only: the gate failed; the exit code is 0" in out
    assert cases["epsstar.mlp-0"].find("failure") is not None


def test_warn_only_in_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    config = "warn-only = true\n" + PER_MODEL.format(limit=2.0)
    code, out, _, _ = _run(tmp_path, config, capsys)
    assert code == 0
    assert "warn-only" in out


def test_an_unknown_key_is_refused_before_any_audit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err, cases = _run(tmp_path, "max-epsilon = 1.0\nmax_epsilon = 2.0\n", capsys)
    assert code == 2
    assert not cases
    assert not (tmp_path / "junit.xml").exists()
    message = err.strip()
    assert "\n" not in message
    assert "max_epsilon" in message


def test_one_check_is_counted_in_the_singular(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    only_the_mlp = '[[limits]]\nmodel = "models/*.onnx"\nmax-epsilon = 3.0\n'
    code, out, _, _ = _run(tmp_path, only_the_mlp, capsys)
    assert code == 0, out
    assert "0 of 2 audited models above their limits (" in out
    assert "epsstar.toml: 1 check)\n" in out
