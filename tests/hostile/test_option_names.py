"""A refused option value names the flag the user typed, in every command.

The library checks its parameters by their Python names (``batch_size``, ``workers``); the
command line must say ``--batch-size`` and ``--jobs``, which the user typed. Each case is
one line on standard error, exit code 2, nothing written.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from epsstar.cli.exit_codes import EXIT_USAGE
from tests.conftest import invoke

MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "models"
TRAIN = str(MODELS / "binary_train.csv")
POPULATION = str(MODELS / "binary_population.csv")
AUDIT = ["audit", str(MODELS / "binary_logreg.onnx"), "--train", TRAIN, "--population", POPULATION]
AUDIT += ["--label-column", "label", "--quiet"]
AUDIT_TRAINING = ["audit-training", "--train", TRAIN, "--population", POPULATION]
AUDIT_TRAINING += ["--label-column", "label", "--quiet", "--epochs", "1", "--canaries", "100"]
TRAIN_ = ["train", "--data", TRAIN, "--label-column", "label", "--quiet", "--out", "{out}"]
EPSILON = ["epsilon", "--train-losses", "{losses}", "--population-losses", "{losses}"]
REFERENCES = ["references", "--data", TRAIN, "--label-column", "label", "--out", "{out}"]
SWEEP = 'data = "{train}"\nlabel_column = "label"\nrepeats = 1\n\n[baseline]\nepochs = [1]\n'

#: (command line, the flag refused, its value as the message ends with it).
CASES: dict[str, tuple[list[str], str, str]] = {
    "audit-many --jobs": (["audit-many", "{manifest}", "--jobs", "0"], "--jobs", "0"),
    "audit-many --jobs on dask": (
        ["audit-many", "{manifest}", "--jobs", "0", "--engine", "dask"],
        "--jobs",
        "0",
    ),
    "audit-training --jobs": ([*AUDIT_TRAINING, "--jobs", "0"], "--jobs", "0"),
    "audit-training --jobs on dask": (
        [*AUDIT_TRAINING, "--jobs", "0", "--engine", "dask"],
        "--jobs",
        "0",
    ),
    "audit-training --runs": ([*AUDIT_TRAINING, "--runs", "0"], "--runs", "0"),
    "audit-training --runs 2": ([*AUDIT_TRAINING, "--runs", "2"], "--runs", "2"),
    "audit-training --canaries": ([*AUDIT_TRAINING, "--canaries", "0"], "--canaries", "0"),
    "audit-training --delta": ([*AUDIT_TRAINING, "--delta", "0.7"], "--delta", "0.7"),
    "audit-training --confidence": (
        [*AUDIT_TRAINING, "--confidence", "1"],
        "--confidence",
        "1.0",
    ),
    "audit-training --claimed-epsilon": (
        [*AUDIT_TRAINING, "--claimed-epsilon", "-1"],
        "--claimed-epsilon",
        "-1.0",
    ),
    "audit-training --momentum": (
        [*AUDIT_TRAINING, "--momentum", "1"],
        "--momentum",
        "1.0",
    ),
    "audit-training --stack": ([*AUDIT_TRAINING, "--stack", "0"], "--stack", "0"),
    "audit-training --timeout": (
        [*AUDIT_TRAINING[:-4], "--command", "true {train} {out}", "--timeout", "0"],
        "--timeout",
        "0.0",
    ),
    "sweep --workers": (
        ["sweep", "{sweep}", "--engine", "dask", "--workers", "0"],
        "--workers",
        "0",
    ),
    "sweep --stack": (["sweep", "{sweep}", "--stack", "0"], "--stack", "0"),
    "demo --jobs": (["demo", "--quick", "--out", "{out}", "--jobs", "0"], "--jobs", "0"),
    "audit --batch-size": ([*AUDIT, "--batch-size", "0"], "--batch-size", "0"),
    "audit --n-bootstrap": (
        [*AUDIT, "--interval", "0.9", "--n-bootstrap", "1"],
        "--n-bootstrap",
        "1",
    ),
    "audit --interval": ([*AUDIT, "--interval", "1.5"], "--interval", "1.5"),
    "audit --delta": ([*AUDIT, "--delta", "2"], "--delta", "2.0"),
    "audit --confidence=": ([*AUDIT, "--confidence=2"], "--confidence", "2.0"),
    "audit --max-epsilon": ([*AUDIT, "--max-epsilon", "-1"], "--max-epsilon", "-1.0"),
    "audit --rmia-a": ([*AUDIT, "--rmia-a", "2"], "--rmia-a", "2.0"),
    "audit --rmia-gamma": ([*AUDIT, "--rmia-gamma", "0"], "--rmia-gamma", "0.0"),
    "audit-many --delta": (["audit-many", "{manifest}", "--delta", "0"], "--delta", "0.0"),
    "epsilon --delta": (
        [*EPSILON, "--delta", "0"],
        "--delta",
        "0.0",
    ),
    "train --epochs": ([*TRAIN_, "--epochs", "0"], "--epochs", "0"),
    "train --lr": ([*TRAIN_, "--epochs", "1", "--lr", "0"], "--lr", "0.0"),
    "train --momentum": ([*TRAIN_, "--epochs", "1", "--momentum", "2"], "--momentum", "2.0"),
    "train --clip": ([*TRAIN_, "--epochs", "1", "--clip", "0"], "--clip", "0.0"),
    "train --hidden": ([*TRAIN_, "--epochs", "1", "--hidden", "4,0"], "--hidden", "0"),
    "train --models": ([*TRAIN_, "--epochs", "1", "--models", "0"], "--models", "0"),
    "references --count": (
        [*REFERENCES, "--count", "0"],
        "--count",
        "0",
    ),
}


@pytest.mark.parametrize(("words", "flag", "value"), CASES.values(), ids=CASES)
def test_a_refused_value_names_the_flag(
    words: list[str],
    flag: str,
    value: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "manifest.csv").write_text(
        "model,train,population,label_column\n"
        f"{MODELS / 'binary_logreg.onnx'},{TRAIN},{POPULATION},label\n"
    )
    (tmp_path / "sweep.toml").write_text(SWEEP.format(train=TRAIN))
    (tmp_path / "losses.npy").write_bytes((MODELS.parent / "losses" / "train.npy").read_bytes())
    before = sorted(tmp_path.iterdir())
    named = {
        "manifest": tmp_path / "manifest.csv",
        "sweep": tmp_path / "sweep.toml",
        "losses": tmp_path / "losses.npy",
        "out": tmp_path / "out",
    }
    filled = [word.format(**named) if word.startswith("{") else word for word in words]
    code, out, err = invoke(filled, capsys)
    assert "Traceback" not in err
    assert (code, out) == (EXIT_USAGE, "")
    (line,) = err.splitlines()
    assert line.startswith(f"epsstar {words[0]}: error: {flag} "), line
    assert line.endswith(f"Found {value}."), line
    assert sorted(tmp_path.iterdir()) == before
