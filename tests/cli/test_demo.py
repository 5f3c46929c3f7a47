"""``epsstar demo``: train and audit models on UCI Adult, end to end (``--quick``)."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from epsstar.cli import main
from epsstar.cli.commands import demo

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")

QUICK_STRATEGIES = ["nonprivate-e50", "dp-eps3-e10"]


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "epsstar.cli", "demo", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )


@pytest.fixture(scope="module")
def quick(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    base = tmp_path_factory.mktemp("demo")
    done = run("--quick", "--out", "out", cwd=base)
    return base, done


def _listed_files(stdout: str) -> list[str]:
    """The paths the 'Files:' block names (two for the data, one for the others)."""
    block = stdout.split("\nFiles:\n", 1)[1].split("\n\n", 1)[0]
    paths = []
    for line in block.splitlines():
        label, *words = line.split()
        if words[0] in ("unavailable", "not"):
            continue
        paths += words[:2] if label == "data" else words[:1]
    return paths


def test_quick_demo_exits_cleanly(quick: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    _, done = quick
    assert done.returncode == 0, done.stderr
    assert "Epsilon* of 2 models trained on UCI Adult" in done.stdout
    for strategy in QUICK_STRATEGIES:
        assert strategy in done.stdout
    assert "Traceback" not in done.stderr
    # Not a terminal: no progress bars; a line per trained model, one per audited model
    lines = done.stderr.splitlines()
    assert [line.split(" (")[0] for line in lines if line.startswith("trained ")] == [
        f"trained {strategy} #0" for strategy in QUICK_STRATEGIES
    ]
    assert len([line for line in lines if line.startswith("[")]) == 2


def test_quick_demo_results_are_complete(
    quick: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    base, _ = quick
    payload: dict[str, Any] = json.loads((base / "out" / "results.json").read_text())
    assert payload["n_models"] == 2
    assert payload["settings"]["jobs"] == 1  # --quick's default: no worker processes to start
    assert payload["n_failed"] == 0
    assert payload["dataset"]["n_train"] == demo.QUICK_ROWS[0]
    assert payload["dataset"]["n_population"] == demo.QUICK_ROWS[1]
    assert "10.24432/C5XW20" in payload["dataset"]["attribution"]
    assert [s["strategy"] for s in payload["strategies"]] == QUICK_STRATEGIES
    for summary in payload["strategies"]:
        assert summary["n_models"] == 1
        assert summary["epsilon_star_min"] == summary["epsilon_star_max"] >= 0.0
        assert summary["mechanism_epsilon"] == pytest.approx(summary["epsilon_star_mean"])
    for record in payload["models"]:
        entry, result, params = record["entry"], record["result"], record["entry"]["params"]
        assert "error" not in record
        assert set(entry) >= {"model", "train", "population", "strategy", "repeat", "params"}
        assert (base / entry["model"]).is_file()
        assert (base / entry["model"]).with_name("training.json").is_file()
        assert result["epsilon_star"] >= 0.0
        assert result["epsilon_lower_bound"] >= 0.0
        assert result["n_train"] == demo.QUICK_ROWS[0]
        assert result["n_population"] == demo.QUICK_ROWS[1]
        assert result["provenance"]["classes_from"] == "model"
        assert result["provenance"]["command"] == "epsstar demo --quick --out out"
        assert 0.0 <= result["utility"]["population"]["accuracy"] <= 1.0
        assert 0.0 <= result["utility"]["population"]["auroc"] <= 1.0
        if params["private"]:
            assert params["target_epsilon"] == 3.0
            assert 0.0 < params["epsilon"] <= 3.0
            assert params["delta"] == pytest.approx(result["delta"])
        else:
            assert params["epsilon"] is None
    assert [r["entry"]["params"]["epochs"] for r in payload["models"]] == [50, 10]


def test_quick_demo_shows_a_leak_beside_a_dp_model(
    quick: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    """The over-fitted network provably leaks; the DP-SGD model stays within the ε its
    accountant gives for its training, as its file declares and its report says."""
    base, done = quick
    payload = json.loads((base / "out" / "results.json").read_text())
    leaking, private = (record["result"] for record in payload["models"])
    accounted = payload["models"][1]["entry"]["params"]
    assert not payload["models"][0]["entry"]["params"]["private"]
    assert leaking["epsilon_lower_bound"] > 0.0  # proven from counted errors, not estimated
    assert leaking["epsilon_star"] > private["epsilon_star"]
    assert leaking["epsilon_lower_bound"] > private["epsilon_lower_bound"]
    assert private["epsilon_lower_bound"] <= private["epsilon_star"] <= accounted["epsilon"]
    declared = private["declared_privacy"]
    assert (declared["epsilon"], declared["delta"]) == (accounted["epsilon"], accounted["delta"])
    assert declared["epsilon_star_above_it"] is False
    # both headlines and lower bounds are printed, in the table and in the audit lines
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines() if line}
    for strategy, result in zip(QUICK_STRATEGIES, (leaking, private), strict=True):
        assert f"{result['epsilon_star']:.4f}" in rows[strategy]
        assert f"{result['epsilon_lower_bound']:.4f}" in rows[strategy]
        line = (
            f"{strategy} #0: Epsilon* {result['epsilon_star']:.4f} "
            f"(95 % lower bound {result['epsilon_lower_bound']:.4f})"
        )
        assert line in done.stderr


def test_quick_demo_files_hold_to_their_schemas(
    quick: tuple[Path, subprocess.CompletedProcess[str]],
    validate_json: Callable[[str, Any], None],
) -> None:
    base, _ = quick
    payload = json.loads((base / "out" / "results.json").read_text())
    validate_json("demo-results", payload)
    assert set(payload["seconds"]) == {"data", "training", "audit", "total"}
    for record in payload["models"]:
        training = base / record["training"]["record"]
        validate_json("training", json.loads(training.read_text()))


def test_quick_demo_trains_with_the_sweep(
    quick: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    """The models folder is a finished sweep: its manifest lists every model for audit-many."""
    from epsstar.audit.many import read_manifest

    base, _ = quick
    entries = read_manifest(base / "out" / "models" / "manifest.csv")
    assert [(e.strategy, e.repeat) for e in entries] == [(s, 0) for s in QUICK_STRATEGIES]
    assert all(entry.model.is_file() for entry in entries)


def test_quick_demo_lists_files_that_exist(
    quick: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    base, done = quick
    listed = _listed_files(done.stdout)
    assert "out/results.json" in listed
    assert "out/data/train.parquet" in listed
    assert "out/data/population.parquet" in listed
    for path in listed:
        assert (base / path).exists(), path


def _visible_text(path: Path) -> str:
    """The text a browser shows of an HTML file (styles and scripts dropped, spaces joined)."""
    page = path.read_text(encoding="utf-8")
    assert page.lstrip().lower().startswith("<!doctype html"), path
    page = re.sub(r"<(style|script)\b.*?</\1>", " ", page, flags=re.DOTALL)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def test_quick_demo_reports(quick: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    """The HTML reports ship with epsstar (jinja2 is a dependency): one report per model and
    the landscape of all of them are written, listed and hold the models' own numbers."""
    base, done = quick
    payload = json.loads((base / "out" / "results.json").read_text())
    assert payload["reports_available"] is True
    assert (payload["landscape"], payload["landscape_error"]) == ("out/landscape.html", None)
    assert "  reports    out/reports/ (2 of 2 models)" in done.stdout
    assert "  landscape  out/landscape.html" in done.stdout
    expected = [f"{strategy}-0.html" for strategy in QUICK_STRATEGIES]
    assert sorted(p.name for p in (base / "out" / "reports").iterdir()) == sorted(expected)
    landscape_page = (base / "out" / "landscape.html").read_text(encoding="utf-8")
    landscape = _visible_text(base / "out" / "landscape.html")
    assert "2 strategies, 2 audited models; utility: AUROC on population data" in landscape
    for record, name in zip(payload["models"], expected, strict=True):
        assert record["report"] == f"out/reports/{name}"
        model, result = record["entry"]["model"], record["result"]
        report = _visible_text(base / record["report"])
        assert f"Epsilon* audit: {model}" in report
        assert f"Epsilon* (δ = {result['delta']:.3g}) {result['epsilon_star']:.4f}" in report
        assert f"Empirical Epsilon* {result['empirical']['epsilon_star']:.4f}" in report
        assert f"Lower bound (95 % confidence) {result['epsilon_lower_bound']:.4f}" in report
        # The landscape draws the model's strategy at its AUROC and links to its report.
        auroc = result["utility"]["population"]["auroc"]
        strategy = record["entry"]["strategy"]
        assert f"{strategy} " in landscape
        assert f"AUROC {auroc:.4f} [{auroc:.4f}, {auroc:.4f}]" in landscape
        assert f'href="reports/{name}"' in landscape_page


def test_refuses_a_non_empty_folder(
    quick: tuple[Path, subprocess.CompletedProcess[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    base, _ = quick
    before = (base / "out" / "results.json").read_bytes()
    assert main(["demo", "--quick", "--out", str(base / "out")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert "--overwrite" in error
    assert (base / "out" / "results.json").read_bytes() == before


def test_overwrite_in_one_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # One small model keeps this second run short; the fixture covers the full --quick grid.
    quick_grid = demo.strategies(quick=True)
    monkeypatch.setattr(demo, "strategies", lambda quick: quick_grid[1:])
    out = tmp_path / "out"
    (out / "models" / "old").mkdir(parents=True)
    (out / "notes.txt").write_text("kept")
    assert (
        main(["demo", "--quick", "--jobs", "1", "--overwrite", "--quiet", "--out", str(out)]) == 0
    )
    assert capsys.readouterr().err == ""
    assert not (out / "models" / "old").exists()
    assert (out / "notes.txt").read_text() == "kept"
    payload = json.loads((out / "results.json").read_text())
    assert payload["settings"]["jobs"] == 1
    assert payload["n_failed"] == 0
    assert payload["n_models"] == 1
    assert (out / "models" / "dp-eps3-e10" / "0" / "model.onnx").is_file()


def test_a_model_that_cannot_be_trained_exits_3_and_keeps_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from epsstar.training.runs.sweep import GridStrategy
    from epsstar.training.trainer import TrainingConfig

    good = GridStrategy("nonprivate-e1", TrainingConfig(epochs=1, batch_size=64, hidden=(4,)))
    bad = GridStrategy("too-big-a-batch", TrainingConfig(epochs=1, batch_size=10**6))
    monkeypatch.setattr(demo, "strategies", lambda quick: [good, bad])
    out = tmp_path / "out"
    assert main(["demo", "--quick", "--jobs", "1", "--quiet", "--out", str(out)]) == 3
    error = capsys.readouterr().err
    assert "FAILED too-big-a-batch #0: not trained: batch_size must be at most" in error
    payload = json.loads((out / "results.json").read_text())
    assert (payload["n_models"], payload["n_failed"]) == (2, 1)
    trained, failed = payload["models"]
    assert trained["result"]["epsilon_star"] >= 0.0
    assert set(failed) == {"entry", "error"}
    assert [s["n_failed"] for s in payload["strategies"]] == [0, 1]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--jobs", "0"], "--jobs must be at least 1"),
        (["--repeats", "0"], "--repeats must be at least 1"),
        (["--seed", "-1"], "--seed must be"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main(["demo", "--quick", "--out", str(tmp_path / "out"), *args]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert message in error
    assert not (tmp_path / "out").exists()


def test_missing_extras_are_one_line_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # what an install without the extra has
    assert main(["demo", "--quick", "--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert "the demo trains and audits models and needs torch: " in error
    assert not (tmp_path / "out").exists()


def test_a_bad_number_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["demo", "--jobs", "two"])
    assert stop.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert "invalid int value" in error


def test_an_output_path_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    assert main(["demo", "--quick", "--out", str(target)]) == 2
    assert "--out must name a folder, not a file" in capsys.readouterr().err


def test_full_demo_follows_the_paper() -> None:
    chosen = {s.label: s.config for s in demo.strategies(quick=False)}
    assert list(chosen) == [
        "nonprivate-e1",
        "nonprivate-e5",
        "nonprivate-e10",
        "nonprivate-e20",
        "dp-eps1-e5",
        "dp-eps3-e5",
        "dp-eps10-e5",
    ]
    for config in chosen.values():
        assert (config.lr, config.momentum) == (0.01, 0.9)
        assert config.delta is None  # 1/(n ln n)
    assert [c.target_epsilon for c in chosen.values() if c.private] == [1.0, 3.0, 10.0]


def test_help_states_the_time(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["demo", "--help"])
    assert stop.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())  # argparse re-wraps the text
    assert "measured timings in docs/performance.md" in shown
    assert "--quick" in shown


def test_training_in_worker_processes_reports_every_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--jobs 2``: the grid is one sweep in two worker processes, whose epochs and σ
    searches reach the progress lines of this process."""
    from epsstar.training.runs.sweep import GridStrategy
    from epsstar.training.trainer import TrainingConfig

    small = [
        GridStrategy("nonprivate-e1", TrainingConfig(epochs=1, batch_size=64, hidden=(4,))),
        GridStrategy(
            "dp-eps3-e2",
            TrainingConfig(epochs=2, batch_size=64, hidden=(4,), clip=1.0, target_epsilon=3.0),
        ),
    ]
    monkeypatch.setattr(demo, "strategies", lambda quick: small)
    out = tmp_path / "out"
    assert main(["demo", "--quick", "--jobs", "2", "--out", str(out)]) == 0
    progress = capsys.readouterr().err
    assert "dp-eps3-e2: choosing the noise multiplier for ε = 3 ..." in progress
    for label in ("nonprivate-e1", "dp-eps3-e2"):
        assert f"trained {label} #0 (" in progress
    payload = json.loads((out / "results.json").read_text())
    assert (payload["settings"]["jobs"], payload["n_models"], payload["n_failed"]) == (2, 2, 0)
