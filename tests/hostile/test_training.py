"""Hostile input to ``epsstar train`` and ``epsstar sweep``: every case built in tmp_path.

A resumed sweep must not keep models that another configuration or other data made; a
bad config, output path or thread count must stop with one line and exit code 2; an
interrupted run must leave nothing a resume would take as finished.
"""

from __future__ import annotations

import csv
import json
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from epsstar.cli import main
from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.runtime.threads import THREADS_ENV, available_cores, choose_threads
from epsstar.training import trainer
from epsstar.training.runs.sweep import load_sweep_config, run_sweep
from tests.hostile.interrupting import cli_process

SWEEP = """
data = "train.csv"
label_column = "label"
population = "population.csv"
repeats = 1
seed = 3

[model]
hidden = []

[baseline]
epochs = [1]
batch_size = 20
"""


def _table(path: Path, n: int, seed: int, columns: int = 3) -> Path:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n, columns)), columns=[f"f{j}" for j in range(columns)])
    frame["label"] = (frame["f0"] + rng.normal(size=n) > 0).astype(int)
    frame.to_csv(path, index=False)
    return path


def _sweep_dir(tmp_path: Path, text: str = SWEEP) -> Path:
    _table(tmp_path / "train.csv", 120, seed=1)
    _table(tmp_path / "population.csv", 80, seed=2)
    (tmp_path / "sweep.toml").write_text(text, encoding="utf-8")
    return tmp_path / "sweep.toml"


def _sweep(config: Path, *extra: str) -> int:
    return main(["sweep", str(config), "--out", str(config.parent / "models"), "--quiet", *extra])


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def _record(config: Path) -> dict[str, Any]:
    path = config.parent / "models" / "nonprivate-e1" / "0" / "training.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


def _change_data(config: Path) -> None:
    _table(config.parent / "train.csv", 120, seed=9)


def _change_population(config: Path) -> None:
    _table(config.parent / "population.csv", 80, seed=9)


def _change_hidden(config: Path) -> None:
    config.write_text(SWEEP.replace("hidden = []", "hidden = [4]"), encoding="utf-8")


def _change_features(config: Path) -> None:
    config.write_text('features = ["f0", "f1"]\n' + SWEEP, encoding="utf-8")


def _change_label(config: Path) -> None:
    frame = pd.read_csv(config.parent / "train.csv").rename(columns={"label": "y"})
    frame.to_csv(config.parent / "train.csv", index=False)
    population = pd.read_csv(config.parent / "population.csv").rename(columns={"label": "y"})
    population.to_csv(config.parent / "population.csv", index=False)
    config.write_text(SWEEP.replace('"label"', '"y"'), encoding="utf-8")


def _change_seed(config: Path) -> None:
    config.write_text(SWEEP.replace("seed = 3", "seed = 4"), encoding="utf-8")


def _change_other_file(config: Path) -> None:
    """The same bytes under another name: the same data, so the model is reused."""
    (config.parent / "copy.csv").write_bytes((config.parent / "train.csv").read_bytes())
    config.write_text(SWEEP.replace('"train.csv"', '"copy.csv"'), encoding="utf-8")


def _drop_fingerprint(config: Path) -> None:
    path = config.parent / "models" / "nonprivate-e1" / "0" / "training.json"
    document = _record(config)
    del document["fingerprint"]
    path.write_text(json.dumps(document), encoding="utf-8")


def _corrupt_record(config: Path) -> None:
    path = config.parent / "models" / "nonprivate-e1" / "0" / "training.json"
    path.write_text('{"schema_version": 2, "kind": ', encoding="utf-8")


def _gut_record(config: Path) -> None:
    """Valid JSON with the right fingerprint but the rest of the record removed by hand."""
    path = config.parent / "models" / "nonprivate-e1" / "0" / "training.json"
    path.write_text(json.dumps({"fingerprint": _record(config)["fingerprint"]}), encoding="utf-8")


def _delete_model(config: Path) -> None:
    (config.parent / "models" / "nonprivate-e1" / "0" / "model.onnx").unlink()


CHANGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "other-data-content": (_change_data, "the training data (content hash) changed"),
    "other-population": (_change_population, "the population data (content hash) changed"),
    "other-hidden": (_change_hidden, "hidden changed from [] to [4]"),
    "other-features": (
        _change_features,
        "the feature columns changed from ['f0', 'f1', 'f2'] to ['f0', 'f1']",
    ),
    "other-label-column": (_change_label, "the training data (content hash) changed"),
    "other-seed": (_change_seed, "seed changed from 3 to 4"),
    "no-fingerprint": (_drop_fingerprint, "has no fingerprint (it was trained by an older"),
    "corrupt-training-json": (
        _corrupt_record,
        "its training.json cannot be read (must be JSON (Expecting",
    ),
    "gutted-training-json": (
        _gut_record,
        "is not as epsstar writes it (missing private, hyperparameters, utility, model)",
    ),
    "model-file-deleted": (_delete_model, "its model.onnx is missing"),
}


@pytest.mark.parametrize("case", list(CHANGES))
def test_resumed_sweep_refuses_models_of_another_config(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    change, what = CHANGES[case]
    config = _sweep_dir(tmp_path)
    assert _sweep(config) == 0
    manifest = (tmp_path / "models" / "manifest.csv").read_bytes()
    capsys.readouterr()
    change(config)
    assert _sweep(config) == 2
    message = _error(capsys)
    assert message.startswith("epsstar sweep: error: the sweep output holds a model that is not")
    assert what in message
    assert "pass --overwrite to train it again. Found '" in message
    assert message.endswith("nonprivate-e1/0/training.json'.")
    assert (tmp_path / "models" / "manifest.csv").read_bytes() == manifest


@pytest.mark.parametrize("case", ["other-hidden", "corrupt-training-json", "no-fingerprint"])
def test_overwrite_trains_a_stale_model_again(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    change, _ = CHANGES[case]
    config = _sweep_dir(tmp_path)
    assert _sweep(config) == 0
    change(config)
    assert _sweep(config, "--overwrite") == 0
    assert "Traceback" not in capsys.readouterr().err
    record = _record(config)
    assert record["fingerprint"]["training"]["hidden"] == ([4] if case == "other-hidden" else [])
    # Resumed once more with the same config: the retrained model is kept.
    outcome = run_sweep(load_sweep_config(config), tmp_path / "models", progress=False)
    assert (outcome.trained, outcome.skipped) == (0, 1)


def test_same_data_under_another_name_is_reused(tmp_path: Path) -> None:
    config = _sweep_dir(tmp_path)
    assert _sweep(config) == 0
    _change_other_file(config)
    outcome = run_sweep(load_sweep_config(config), tmp_path / "models", progress=False)
    assert (outcome.trained, outcome.skipped) == (0, 1)
    with (tmp_path / "models" / "manifest.csv").open() as stream:
        (row,) = list(csv.DictReader(stream))
    assert row["train_data"] == str((tmp_path / "copy.csv").resolve())


def test_manifest_names_the_sweeps_feature_columns(tmp_path: Path) -> None:
    config = _sweep_dir(tmp_path, 'features = ["f2", "f0"]\n' + SWEEP)
    assert _sweep(config) == 0
    with (tmp_path / "models" / "manifest.csv").open() as stream:
        (row,) = list(csv.DictReader(stream))
    assert row["features"] == "f2,f0"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


BAD_SWEEPS: dict[str, tuple[str, str]] = {
    "missing-data-file": (
        SWEEP.replace('"train.csv"', '"absent.csv"'),
        "absent.csv",
    ),
    "huge-repeats": (
        SWEEP.replace("repeats = 1", "repeats = 1000000000"),
        "at most 100,000 are allowed. Found 1,000,000,000.",
    ),
    "negative-repeats": (SWEEP.replace("repeats = 1", "repeats = -1"), "Found -1."),
    "batch-larger-than-data": (
        SWEEP.replace("batch_size = 20", "batch_size = 5000"),
        "batch_size must be at most the number of training records (120). Found 5000.",
    ),
}


@pytest.mark.parametrize("case", list(BAD_SWEEPS))
def test_bad_sweep_config(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, expected = BAD_SWEEPS[case]
    config = _sweep_dir(tmp_path, text)
    assert _sweep(config) == 2
    message = _error(capsys)
    assert message.startswith("epsstar sweep: error: ")
    assert expected in message
    assert not (tmp_path / "models").exists()


def test_sweep_output_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _sweep_dir(tmp_path)
    (tmp_path / "models").write_text("not a folder")
    assert _sweep(config) == 2
    message = _error(capsys)
    assert message == (
        "epsstar sweep: error: --out must name a folder, not a file. "
        f"Found '{tmp_path / 'models'}'."
    )
    assert (tmp_path / "models").read_text() == "not a folder"


def _interrupt_on_epoch(monkeypatch: pytest.MonkeyPatch, after: int) -> None:
    """Make the trainer's epoch loop raise KeyboardInterrupt on call ``after`` + 1."""
    original = trainer._run_epoch
    calls = [0]

    def epoch(*args: Any, **kwargs: Any) -> tuple[float, int]:
        calls[0] += 1
        if calls[0] > after:
            raise KeyboardInterrupt
        return original(*args, **kwargs)

    monkeypatch.setattr(trainer, "_run_epoch", epoch)


def test_ctrl_c_during_sweep_leaves_no_finished_looking_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _sweep_dir(tmp_path, SWEEP.replace("repeats = 1", "repeats = 2"))
    _interrupt_on_epoch(monkeypatch, after=1)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(load_sweep_config(config), tmp_path / "models", progress=False)
    assert (tmp_path / "models" / "nonprivate-e1" / "0" / "training.json").is_file()
    assert not (tmp_path / "models" / "nonprivate-e1" / "1").exists()
    monkeypatch.undo()
    outcome = run_sweep(load_sweep_config(config), tmp_path / "models", progress=False)
    assert (outcome.trained, outcome.skipped) == (1, 1)


def _train_args(tmp_path: Path, out: Path, *extra: str) -> list[str]:
    data = _table(tmp_path / "train.csv", 120, seed=1)
    return [
        *("train", "--data", str(data), "--label-column", "label", "--epochs", "2"),
        *("--out", str(out), *extra),
    ]


def test_ctrl_c_during_train_leaves_no_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _interrupt_on_epoch(monkeypatch, after=1)
    assert main(_train_args(tmp_path, tmp_path / "model", "--quiet")) == 130
    assert "Traceback" not in capsys.readouterr().err
    assert not (tmp_path / "model").exists()


def test_train_into_the_data_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = _train_args(tmp_path, tmp_path, "--quiet")
    data = (tmp_path / "train.csv").read_bytes()
    assert main(args) == 2
    assert _error(capsys) == (
        "epsstar train: error: --out: the output folder is not empty; pass --overwrite to "
        f"replace it. Found '{tmp_path}'."
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.csv"]
    assert main([*args, "--overwrite"]) == 0
    assert (tmp_path / "train.csv").read_bytes() == data
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "model.onnx",
        "model.pt",
        "train.csv",
        "training.json",
    ]


@pytest.mark.parametrize(
    ("extra", "environment", "expected"),
    [
        (["--threads", "0"], None, "--threads must be a positive integer. Found '0'."),
        (["--threads", "-3"], None, "--threads must be a positive integer. Found '-3'."),
        ([], "many", f"{THREADS_ENV} must be a positive integer. Found 'many'."),
    ],
    ids=["threads-zero", "threads-negative", "threads-env-not-a-number"],
)
def test_bad_thread_count(
    extra: list[str],
    environment: str | None,
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if environment is not None:
        monkeypatch.setenv(THREADS_ENV, environment)
    assert main(_train_args(tmp_path, tmp_path / "model", "--quiet", *extra)) == 2
    assert _error(capsys) == f"epsstar train: error: {expected}"
    assert not (tmp_path / "model").exists()


def test_threads_never_exceed_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(THREADS_ENV, raising=False)
    cores = available_cores()
    assert choose_threads(1, 10_000) == cores
    assert 1 <= choose_threads(1) <= cores
    assert choose_threads(cores * 4) == 1
    monkeypatch.setenv(THREADS_ENV, "1")
    assert choose_threads(1) == 1
    with pytest.raises(InvalidInputError, match="Found '0'"):
        choose_threads(1, 0)


def test_train_without_a_terminal_prints_a_line_per_epoch(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    population = _table(tmp_path / "population.csv", 120, seed=2)
    private = ("--target-epsilon", "5", "--population", str(population))
    args = _train_args(tmp_path, tmp_path / "model", *private)
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "train: choosing the noise multiplier for ε = 5 ..." in err
    assert "train: epoch 1/2  loss " in err
    assert "train: epoch 2/2  loss " in err
    assert main([*_train_args(tmp_path, tmp_path / "quiet", "--quiet")]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (
            ["--repeats", "1000000000"],
            "--repeats asks for more than 100,000 models. Found 1000000000.",
        ),
        (["--threads", "0"], "--threads must be a positive integer. Found '0'."),
    ],
    ids=["demo-huge-repeats", "demo-threads-zero"],
)
def test_bad_demo_arguments(
    extra: list[str], expected: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--quick", "--out", str(tmp_path / "demo"), *extra]) == 2
    assert _error(capsys) == f"epsstar demo: error: {expected}"
    assert not (tmp_path / "demo").exists()


def test_demo_says_when_it_chooses_a_noise_multiplier(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from epsstar.cli.commands.demo import _Display, strategies

    configs = {s.label: s.config for s in strategies(quick=True)}
    with _Display(configs, 1, quiet=False) as display:
        display.plan("dp-eps3-e10")
    assert capsys.readouterr().err == "dp-eps3-e10: choosing the noise multiplier for ε = 3 ...\n"


# --- interrupts in a real process, and outputs that would replace an input ---------------------

RECIPE = {
    "model": {"hidden": [4]},
    "hyperparameters": {"epochs": 2, "batch_size": 16, "lr": 0.01, "momentum": 0.9},
}


def _interrupted(args: list[str], pause_at_epoch: int) -> tuple[int, str]:
    """Run ``epsstar args`` in a child process that stops in epoch ``pause_at_epoch`` (counted
    over every model or stack of models it trains), send it SIGINT there; its exit code and
    standard error."""
    code = (
        "import sys, time\n"
        "from epsstar.training import batched, trainer\n"
        "calls = [0]\n"
        "def pausing(original):\n"
        "    def epoch(*args, **kwargs):\n"
        "        calls[0] += 1\n"
        f"        if calls[0] == {pause_at_epoch}:\n"
        "            sys.stderr.write('paused\\n'); sys.stderr.flush(); time.sleep(60)\n"
        "        return original(*args, **kwargs)\n"
        "    return epoch\n"
        "trainer._run_epoch = pausing(trainer._run_epoch)\n"
        "batched._run_epoch = pausing(batched._run_epoch)\n"
        "from epsstar.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    process = cli_process(code, args)
    assert process.stderr is not None
    assert process.stderr.readline() == "paused\n"
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    return process.returncode, err


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _references(tmp_path: Path, out: Path, *extra: str) -> list[str]:
    data = _table(tmp_path / "reference.csv", 200, seed=1)
    recipe = tmp_path / "recipe.json"
    recipe.write_text(json.dumps(RECIPE), encoding="utf-8")
    return [
        *("references", "--data", str(data), "--label-column", "label"),
        *("--recipe", str(recipe), "--count", "3", "--out", str(out), "--quiet", *extra),
    ]


def test_ctrl_c_during_the_second_reference_model_leaves_no_folder(tmp_path: Path) -> None:
    out = tmp_path / "deep" / "refs"
    # the three models are trained as one stack: its epoch 2 is during every model, model 2 too
    code, err = _interrupted(_references(tmp_path, out), pause_at_epoch=2)
    assert (code, err) == (130, "epsstar: interrupted\n")
    assert not (tmp_path / "deep").exists()


def test_ctrl_c_during_references_leaves_an_earlier_run_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "refs"
    assert main(_references(tmp_path, out)) == 0
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    before = _snapshot(out)
    code, err = _interrupted(
        _references(tmp_path, out, "--overwrite", "--seed", "7"), pause_at_epoch=2
    )  # the last epoch of the stack of three, before any folder is written
    assert (code, err) == (130, "epsstar: interrupted\n")
    assert _snapshot(out) == before
    assert sorted(path.name for path in out.iterdir()) == [
        "notes.txt",
        "ref-01",
        "ref-02",
        "ref-03",
        "references.json",
    ]


def test_ctrl_c_during_a_sweep_keeps_finished_models_only(tmp_path: Path) -> None:
    config = _sweep_dir(tmp_path, SWEEP.replace("repeats = 1", "repeats = 3"))
    out = tmp_path / "models"
    args = ["sweep", str(config), "--out", str(out), "--quiet"]
    code, err = _interrupted(args, pause_at_epoch=2)  # the second model's only epoch
    assert (code, err) == (130, "epsstar: interrupted\n")
    assert (out / "nonprivate-e1" / "0" / "training.json").is_file()
    assert not (out / "nonprivate-e1" / "1").exists()
    assert sorted(p.name for p in out.iterdir()) == ["manifest.csv", "nonprivate-e1"]
    outcome = run_sweep(load_sweep_config(config), out, progress=False)
    assert (outcome.trained, outcome.skipped) == (2, 1)


def test_ctrl_c_during_the_first_model_of_a_sweep_leaves_no_folder(tmp_path: Path) -> None:
    config = _sweep_dir(tmp_path)
    out = tmp_path / "new" / "models"
    code, err = _interrupted(["sweep", str(config), "--out", str(out)], pause_at_epoch=1)
    assert (code, err) == (130, "epsstar: interrupted\n")
    assert not (tmp_path / "new").exists()


def test_references_refuse_to_overwrite_their_recipe(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "refs"
    assert main(_references(tmp_path, out)) == 0
    before = _snapshot(out)
    recipe = out / "ref-01" / "training.json"
    data = str(tmp_path / "reference.csv")
    args = ["references", "--data", data, "--label-column", "label", "--recipe", str(recipe)]
    assert main([*args, "--count", "1", "--out", str(out), "--overwrite", "--quiet"]) == 2
    assert _error(capsys) == (
        f"epsstar references: error: --out would overwrite --recipe, an input of this run. "
        f"Found '{recipe}'."
    )
    assert _snapshot(out) == before


def test_a_sweep_refuses_to_overwrite_its_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "models"
    out.mkdir()
    _table(out / "manifest.csv", 120, seed=1)  # the data sit where the manifest goes
    config = _sweep_dir(tmp_path, SWEEP.replace('"train.csv"', '"models/manifest.csv"'))
    data = (out / "manifest.csv").read_bytes()
    assert _sweep(config) == 2
    assert _error(capsys) == (
        "epsstar sweep: error: --out would overwrite the sweep's data, an input of this run. "
        f"Found '{out / 'manifest.csv'}'."
    )
    assert (out / "manifest.csv").read_bytes() == data
    assert sorted(p.name for p in out.iterdir()) == ["manifest.csv"]


def test_train_refuses_an_output_linked_to_its_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "model"
    out.mkdir()
    data = _table(tmp_path / "train.csv", 120, seed=1)
    (out / "training.json").symlink_to(data)
    args = _train_args(tmp_path, out, "--overwrite", "--quiet")
    assert main(args) == 2
    assert _error(capsys) == (
        "epsstar train: error: --out would overwrite --data, an input of this run. "
        f"Found '{out / 'training.json'}'."
    )
    assert (tmp_path / "train.csv").read_bytes() == data.read_bytes()
