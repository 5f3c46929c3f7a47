"""Every command, given bad input, ends with exit code 2 and one line on standard error.

A battery over all subcommands: missing, empty, binary, deep and malformed files, folders
given as files, out-of-range numbers, paths with line breaks, unknown columns. Each case
runs in-process through ``epsstar.cli.main`` and must leave no traceback, exactly one
line starting with ``epsstar``, and no output file. The classes behind the lines are in
docs/reliability.md.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from epsstar.cli import main

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "models"
MODEL = str(FIXTURES / "binary_logreg.onnx")
TRAIN = str(FIXTURES / "binary_train.csv")
POPULATION = str(FIXTURES / "binary_population.csv")

#: Files a case may name, made in its tmp_path.
Maker = Callable[[Path], None]


def _files(tmp: Path) -> None:
    (tmp / "empty.csv").write_bytes(b"")
    (tmp / "binary.csv").write_bytes(bytes(range(256)) * 4)
    (tmp / "folder.csv").mkdir()
    (tmp / "deep.json").write_text("[" * 50_000 + "]" * 50_000, encoding="utf-8")
    (tmp / "not.json").write_text("{'a': 1,", encoding="utf-8")
    (tmp / "negative.json").write_text(
        json.dumps({"strategy": "s", "epsilon_star": -3, "utility": {"population": {}}}),
        encoding="utf-8",
    )
    (tmp / "deep.toml").write_text("a = " + "[" * 10_000 + "]" * 10_000 + "\n", encoding="utf-8")
    (tmp / "text.npy").write_bytes(b"\x93NUMPY not really")
    np.save(tmp / "nan.npy", np.full(200, np.nan))
    np.save(tmp / "losses.npy", np.random.default_rng(0).normal(size=200))
    shutil.copyfile(TRAIN, tmp / "tr\nain.csv")
    (tmp / "manifest.csv").write_text("model,train\n", encoding="utf-8")


def _audit(*extra: str) -> list[str]:
    return ["audit", MODEL, "--train", TRAIN, "--population", POPULATION, *extra]


CASES: dict[str, list[str]] = {
    # argument parsing
    "no command": [],
    "unknown command": ["frobnicate"],
    "audit without arguments": ["audit"],
    "audit delta not a number": _audit("--label-column", "label", "--delta", "x"),
    "audit delta above 1": _audit("--label-column", "label", "--delta", "2"),
    "audit seed negative": _audit("--label-column", "label", "--seed", "-1"),
    "audit interval 1": _audit("--label-column", "label", "--interval", "1"),
    "audit max epsilon nan": _audit("--label-column", "label", "--max-epsilon", "nan"),
    # files
    "audit model missing": [
        "audit",
        "{tmp}/nothing.onnx",
        "--train",
        TRAIN,
        "--population",
        POPULATION,
        "--label-column",
        "label",
    ],
    "audit model is a folder": [
        "audit",
        "{tmp}/folder.csv",
        "--train",
        TRAIN,
        "--population",
        POPULATION,
        "--label-column",
        "label",
    ],
    "audit model is garbage": [
        "audit",
        "{tmp}/binary.csv",
        "--train",
        TRAIN,
        "--population",
        POPULATION,
        "--label-column",
        "label",
    ],
    "audit train empty": [
        "audit",
        MODEL,
        "--train",
        "{tmp}/empty.csv",
        "--population",
        POPULATION,
        "--label-column",
        "label",
    ],
    "audit train binary": [
        "audit",
        MODEL,
        "--train",
        "{tmp}/binary.csv",
        "--population",
        POPULATION,
        "--label-column",
        "label",
    ],
    "audit train folder": [
        "audit",
        MODEL,
        "--train",
        "{tmp}/folder.csv",
        "--population",
        POPULATION,
        "--label-column",
        "label",
    ],
    "audit train path with a line break": [
        "audit",
        MODEL,
        "--train",
        "{tmp}/tr\nain.csv",
        "--population",
        POPULATION,
        "--label-column",
        "x",
    ],
    "audit unknown label": _audit("--label-column", "nope"),
    "audit long label": _audit("--label-column", "L" * 10_007),
    "audit unknown feature": _audit("--label-column", "label", "--features", "x0,zz"),
    "audit unknown slice": _audit("--label-column", "label", "--slice-by", "zz"),
    "audit json into a folder": _audit("--label-column", "label", "--json", "{tmp}/folder.csv"),
    "audit json over an input": _audit("--label-column", "label", "--json", TRAIN),
    "audit storage options not json": _audit("--label-column", "label", "--storage-options", "{"),
    "audit unknown attack": _audit("--label-column", "label", "--attack", "nope"),
    "audit rmia without references": _audit("--label-column", "label", "--attack", "rmia"),
    # epsilon
    "epsilon losses missing": [
        "epsilon",
        "--train-losses",
        "{tmp}/none.npy",
        "--population-losses",
        "{tmp}/losses.npy",
    ],
    "epsilon losses nan": [
        "epsilon",
        "--train-losses",
        "{tmp}/nan.npy",
        "--population-losses",
        "{tmp}/losses.npy",
    ],
    "epsilon losses damaged": [
        "epsilon",
        "--train-losses",
        "{tmp}/text.npy",
        "--population-losses",
        "{tmp}/losses.npy",
    ],
    "epsilon losses empty csv": [
        "epsilon",
        "--train-losses",
        "{tmp}/empty.csv",
        "--population-losses",
        "{tmp}/losses.npy",
    ],
    "epsilon rate window": [
        "epsilon",
        "--train-losses",
        "{tmp}/losses.npy",
        "--population-losses",
        "{tmp}/losses.npy",
        "--rate-window",
        "0.9,0.1",
    ],
    # landscape
    "landscape deep json": ["landscape", "{tmp}/deep.json", "--out", "{tmp}/l.html"],
    "landscape not json": ["landscape", "{tmp}/not.json", "--out", "{tmp}/l.html"],
    "landscape negative epsilon": ["landscape", "{tmp}/negative.json", "--out", "{tmp}/l.html"],
    "landscape missing": ["landscape", "{tmp}/none.json", "--out", "{tmp}/l.html"],
    "landscape binary": ["landscape", "{tmp}/binary.csv", "--out", "{tmp}/l.html"],
    # audit-many
    "audit-many manifest missing": ["audit-many", "{tmp}/none.csv"],
    "audit-many manifest binary": ["audit-many", "{tmp}/binary.csv"],
    "audit-many manifest empty": ["audit-many", "{tmp}/empty.csv"],
    "audit-many manifest without rows": ["audit-many", "{tmp}/manifest.csv"],
    "audit-many deep toml": ["audit-many", "{tmp}/deep.toml"],
    # training
    "train data missing": [
        "train",
        "--data",
        "{tmp}/none.csv",
        "--label-column",
        "label",
        "--epochs",
        "1",
        "--out",
        "{tmp}/m",
    ],
    "train epochs negative": [
        "train",
        "--data",
        TRAIN,
        "--label-column",
        "label",
        "--epochs",
        "-1",
        "--out",
        "{tmp}/m",
    ],
    "train hidden text": [
        "train",
        "--data",
        TRAIN,
        "--label-column",
        "label",
        "--epochs",
        "1",
        "--hidden",
        "a,b",
        "--out",
        "{tmp}/m",
    ],
    "train huge network": [
        "train",
        "--data",
        TRAIN,
        "--label-column",
        "label",
        "--epochs",
        "1",
        "--hidden",
        "200000,200000",
        "--out",
        "{tmp}/m",
    ],
    "sweep config missing": ["sweep", "{tmp}/none.toml", "--out", "{tmp}/s"],
    "sweep config deep": ["sweep", "{tmp}/deep.toml", "--out", "{tmp}/s"],
    "sweep config binary": ["sweep", "{tmp}/binary.csv", "--out", "{tmp}/s"],
    "references count 0": [
        "references",
        "--data",
        TRAIN,
        "--label-column",
        "label",
        "--count",
        "0",
        "--out",
        "{tmp}/r",
    ],
    "references count huge": [
        "references",
        "--data",
        TRAIN,
        "--label-column",
        "label",
        "--count",
        "1000000000",
        "--out",
        "{tmp}/r",
    ],
    "references recipe deep": [
        "references",
        "--data",
        TRAIN,
        "--label-column",
        "label",
        "--recipe",
        "{tmp}/deep.json",
        "--out",
        "{tmp}/r",
    ],
    "simulate seed negative": ["simulate", "--seed", "-1"],
    "demo jobs 0": ["demo", "--jobs", "0", "--out", "{tmp}/d"],
    "demo out is a file": ["demo", "--out", TRAIN],
}


@pytest.mark.parametrize("words", list(CASES.values()), ids=list(CASES))
def test_bad_input_is_one_line_and_exit_2(
    words: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _files(tmp_path)
    before = set(tmp_path.rglob("*"))
    try:
        code = main([word.replace("{tmp}", str(tmp_path)) for word in words])
    except SystemExit as exit_:  # argparse's usage errors leave as the console script would
        code = exit_.code
    captured = capsys.readouterr()
    err = captured.err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith(("epsstar", "usage")), err
    assert "encountered" not in err  # numpy's RuntimeWarning text
    assert set(tmp_path.rglob("*")) == before  # nothing written, no folder made
