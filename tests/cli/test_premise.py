"""``epsstar audit`` checks its premise: a shifted population is flagged (summary line,
JSON, exit code 4 under a gate), an unshifted one is not, and the blind baseline can be
skipped with a recorded reason."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from epsstar.cli import main
from epsstar.cli.exit_codes import EXIT_GATE_FAILED, EXIT_OK, EXIT_PREMISE_FAILED

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "fixtures" / "models"
WARNING = "train and population differ without the model"


def _audit(tmp_path: Path, population: Path, *extra: str) -> tuple[int, str, dict[str, object]]:
    out = tmp_path / "audit.json"
    argv = ["audit", str(MODELS / "binary_logreg.onnx"), "--train"]
    argv += [str(MODELS / "binary_train.csv"), "--population", str(population)]
    argv += ["--label-column", "label", "--features", "x0,x1,x2,x3,x4,x5,x6,x7"]
    code = main([*argv, "--json", str(out), *extra])
    return code, "", json.loads(out.read_text())


@pytest.fixture(scope="module")
def shifted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The binary population with x0 moved by 1.5 of its standard deviations: a shift the
    records carry whatever the model does (the blind AUC is about 0.8)."""
    frame = pd.read_csv(MODELS / "binary_population.csv")
    frame["x0"] = frame["x0"] + 1.5 * frame["x0"].std()
    path = tmp_path_factory.mktemp("shifted") / "population.csv"
    frame.to_csv(path, index=False)
    return path


def test_a_shifted_population_fails_the_premise(
    shifted: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, document = _audit(tmp_path, shifted)
    stdout = capsys.readouterr().out
    assert code == EXIT_OK  # no gate: the premise is reported, not enforced
    assert document["premise_holds"] is False
    baseline = document["blind_baseline"]
    assert isinstance(baseline, dict)
    assert baseline["lower_bound"] > 0
    assert baseline["auc"] > 0.7
    assert baseline["folds"] == 2
    assert baseline["skipped"] is None
    assert "premise FAILS" in stdout
    assert f"warning: {WARNING}" in stdout


def test_the_same_distribution_holds_the_premise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, document = _audit(tmp_path, MODELS / "binary_population.csv")
    stdout = capsys.readouterr().out
    assert code == EXIT_OK
    assert document["premise_holds"] is True
    baseline = document["blind_baseline"]
    assert isinstance(baseline, dict)
    assert baseline["lower_bound"] == 0
    # Both tables are one random split of one sample: the blind classifier guesses.
    # (0.1 around 0.5 holds at 600/400 rows; a classifier scored on its own fit rows
    # reaches 0.79 here.)
    assert abs(baseline["auc"] - 0.5) < 0.1
    assert "premise holds" in stdout
    assert WARNING not in stdout


def test_a_gate_on_a_failed_premise_exits_4_unless_accepted(
    shifted: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gate = ("--max-epsilon", "100")  # a limit the model passes
    code, _, document = _audit(tmp_path, shifted, *gate)
    stdout = capsys.readouterr().out
    assert document["passed"] is True
    assert code == EXIT_PREMISE_FAILED == 4
    assert "the premise fails: exit 4 unless --accept-premise-failure" in stdout
    code, _, document = _audit(tmp_path, shifted, *gate, "--accept-premise-failure")
    assert code == EXIT_OK
    code, _, _ = _audit(tmp_path, shifted, "--max-epsilon", "0", "--accept-premise-failure")
    assert code == EXIT_GATE_FAILED


def test_the_blind_baseline_can_be_skipped_with_a_reason(
    shifted: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reason = "population drawn by the same script, checked by hand"
    code, _, document = _audit(
        tmp_path, shifted, "--no-blind-baseline", reason, "--max-epsilon", "100"
    )
    stdout = capsys.readouterr().out
    assert code == EXIT_OK  # not checked, so not enforced
    assert document["premise_holds"] is None
    assert document["blind_baseline"] == {
        "epsilon_star": None,
        "method": None,
        "lower_bound": None,
        "confidence": None,
        "auc": None,
        "classifier": None,
        "folds": None,
        "fitted_rows": None,
        "skipped": reason,
        "tests": [],
    }
    assert f"blind baseline: not run ({reason})" in stdout


def test_the_reason_is_required_so_the_option_never_takes_the_model_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Placed before MODEL, ``--no-blind-baseline`` once swallowed the model's path as its
    reason. The reason is now a required value: given one, the model path is read as the
    model; given none (the option last, or a blank reason), a usage error with exit 2."""
    out = tmp_path / "audit.json"
    tables = ["--train", str(MODELS / "binary_train.csv")]
    tables += ["--population", str(MODELS / "binary_population.csv")]
    tables += ["--label-column", "label", "--features", "x0,x1,x2,x3,x4,x5,x6,x7"]
    model = str(MODELS / "binary_logreg.onnx")
    reason = "a random hold-out"
    code = main(["audit", "--no-blind-baseline", reason, model, *tables, "--json", str(out)])
    assert code == EXIT_OK
    document = json.loads(out.read_text())
    assert document["blind_baseline"]["skipped"] == reason
    assert document["provenance"]["model"].endswith("binary_logreg.onnx")
    for bad in (["--no-blind-baseline"], ["--no-blind-baseline", "  "]):
        with pytest.raises(SystemExit) as exited:
            main(["audit", model, *tables, "--json", str(out), *bad])
        assert exited.value.code == 2
    assert "--no-blind-baseline" in capsys.readouterr().err


def _manifest(tmp_path: Path, population: Path) -> Path:
    manifest = tmp_path / "manifest.csv"
    row = f"logreg,0,{MODELS / 'binary_logreg.onnx'},{MODELS / 'binary_train.csv'},{population}"
    manifest.write_text(
        f"strategy,repeat,model,train,population,label_column\n{row},label\n", encoding="utf-8"
    )
    return manifest


def test_audit_many_exits_4_on_a_failed_premise_under_a_gate_like_audit(
    shifted: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The gate of ``audit-many`` reads the premise as ``epsstar audit`` does: exit 4 when a
    model's premise fails under --max-epsilon, the gate as usual when accepted, and no
    exit 4 for a model whose premise holds or without a gate."""
    argv = ["audit-many", "--jobs", "1", "--quiet", "--match-columns-by-position"]
    gate = ["--max-epsilon", "100"]  # a limit the model passes
    out = tmp_path / "many.json"
    code = main([*argv, str(_manifest(tmp_path, shifted)), *gate, "--json", str(out)])
    stdout = capsys.readouterr().out
    assert code == EXIT_PREMISE_FAILED
    assert "1 of 1 audited models fail the premise" in stdout
    assert "logreg #0" in stdout
    assert json.loads(out.read_text())["models"][0]["result"]["premise_holds"] is False
    accepted = [*gate, "--accept-premise-failure"]
    assert main([*argv, str(_manifest(tmp_path, shifted)), *accepted]) == EXIT_OK
    assert main([*argv, str(_manifest(tmp_path, shifted))]) == EXIT_OK  # no gate
    held = _manifest(tmp_path, MODELS / "binary_population.csv")
    assert main([*argv, str(held), *gate]) == EXIT_OK
    assert "fail the premise" not in capsys.readouterr().out
