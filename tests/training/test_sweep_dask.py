"""``epsstar sweep --engine dask``: the same models as the single-process sweep, resumable."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from epsstar.cli import main

pytest.importorskip("distributed")

CONFIG = """
data = "{train}"
label_column = "label"
population = "{population}"
repeats = 1
seed = 10

[model]
hidden = [6]

[baseline]
epochs = [1]
batch_size = 50

[dp]
target_epsilons = [2]
batch_sizes = [50]
epochs = 1
"""


def _record(path: Path) -> dict[str, Any]:
    """A ``training.json`` without its timings."""
    record = json.loads(path.read_text(encoding="utf-8"))
    record.pop("wall_time_seconds")
    for epoch in record["history"]:
        epoch.pop("seconds")
    return record


def _close(left: Any, right: Any) -> bool:
    """Equal, numbers to 12 significant digits (the accountant's sums may differ in the
    last bits between processes)."""
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_close(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(_close, left, right))
    if isinstance(left, float) and isinstance(right, float):
        return left == pytest.approx(right, rel=1e-12, abs=1e-15)
    return bool(left == right)


@pytest.mark.slow
def test_sweep_on_a_local_cluster_resumes_and_trains_the_same_model(
    csv_files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "sweep.toml"
    config.write_text(CONFIG.format(train=csv_files[0], population=csv_files[1]))
    single, dask = tmp_path / "single", tmp_path / "dask"
    assert main(["sweep", str(config), "--out", str(single), "--quiet"]) == 0
    shutil.copytree(single, dask)
    # One model never finished (no training.json); the other is kept untouched.
    unfinished = Path("nonprivate-e1", "0")
    (dask / unfinished / "training.json").unlink()
    (dask / unfinished / "model.onnx").write_bytes(b"truncated")
    kept = dask / "dp-eps2-C1-B50-mex-e1" / "0" / "model.pt"
    before = kept.stat().st_mtime_ns
    capsys.readouterr()
    assert main(["sweep", str(config), "--out", str(dask), "--engine", "dask"]) == 0
    captured = capsys.readouterr()
    assert "1 model(s) trained, 1 already done" in captured.out
    assert captured.err.count("(worker tcp://127.0.0.1:") == 1
    assert kept.stat().st_mtime_ns == before
    assert (single / "manifest.csv").read_bytes() == (dask / "manifest.csv").read_bytes()
    record = unfinished / "training.json"
    assert _close(_record(single / record), _record(dask / record))
    # (model.pt, a TorchScript archive, carries a serialization id of its own)
    onnx = Path("model.onnx")
    assert (single / unfinished / onnx).read_bytes() == (dask / unfinished / onnx).read_bytes()
    ran = json.loads((dask / unfinished / "engine.json").read_text())
    assert ran["name"] == "dask"
    assert ran["worker"].startswith("tcp://127.0.0.1:")
    assert not (dask / kept.parent / "engine.json").exists()


@pytest.mark.slow
def test_a_model_that_fails_on_a_worker_is_reported_and_the_others_are_kept(
    csv_files: tuple[Path, Path], tmp_path: Path, in_process: str
) -> None:
    from dataclasses import replace

    from epsstar.audit.engines.dask_engine import Engine
    from epsstar.training.runs.fingerprint import data_fingerprint
    from epsstar.training.runs.pipeline import load_inputs
    from epsstar.training.runs.sweep import GridStrategy, _Job, _sweep_on_dask, load_sweep_config

    config_file = tmp_path / "sweep.toml"
    config_file.write_text(CONFIG.format(train=csv_files[0], population=csv_files[1]))
    config = load_sweep_config(config_file)
    good = config.strategies[0]  # nonprivate-e1
    bad = GridStrategy("too-large-batch", replace(good.config, batch_size=10**6))
    data, population = load_inputs(config.data, "label", config.population)
    job = _Job(
        data,
        population,
        data_fingerprint(data, population),
        {good.label: None, bad.label: None},
        threads=1,
    )
    said: list[str] = []
    out = tmp_path / "out"
    out.mkdir()
    engine = Engine("dask", in_process)
    trained, failed = _sweep_on_dask(config, out, [(bad, 0), (good, 0)], engine, job, said.append)
    assert trained == 1
    assert failed == (
        "too-large-batch repeat 0: batch_size must be at most the number of training records "
        "(1000). Found 1000000.",
    )
    assert (out / good.label / "0" / "training.json").is_file()
    assert not (out / bad.label).exists()
    assert any("failed: batch_size must be at most" in line for line in said)
