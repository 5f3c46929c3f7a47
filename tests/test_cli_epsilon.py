"""``epsstar epsilon`` and ``epsstar simulate`` as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from epsstar.cli import main


@pytest.fixture
def loss_files(tmp_path: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    train, population = tmp_path / "train.npy", tmp_path / "population.npy"
    np.save(train, rng.normal(0.0, 1.0, 2000))
    np.save(population, rng.normal(1.0, 1.0, 2000))
    return train, population


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "epsstar.cli", *args], capture_output=True, text=True, check=False
    )


def test_epsilon_writes_json_and_summary(loss_files: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    done = run(
        "epsilon",
        "--train-losses",
        str(loss_files[0]),
        "--population-losses",
        str(loss_files[1]),
        "--delta",
        "1e-5",
        "--json",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    assert "Epsilon* = " in done.stdout
    payload = json.loads(out.read_text())
    assert payload["delta"] == 1e-5
    assert payload["n_train"] == 2000
    assert payload["method"] == "tails-crossfit"  # the default estimator
    assert payload["epsilon_star"] > 1
    assert f"{payload['epsilon_star']:.4f}" in done.stdout
    assert not list(tmp_path.glob(".result.json.*"))  # no temporary left behind


def test_same_losses_in_every_format_give_the_same_value(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    train, population = rng.gamma(2, 5, 500), rng.gamma(3, 5, 700)
    results = []
    for fmt in ("npy", "csv", "parquet", "csv-noheader"):
        paths = []
        for name, values in (("train", train), ("pop", population)):
            path = tmp_path / f"{name}-{fmt}.{fmt.split('-')[0]}"
            if fmt == "npy":
                np.save(path, values)
            elif fmt == "csv":
                pd.DataFrame({"loss": values}).to_csv(path, index=False, float_format="%.17g")
            elif fmt == "csv-noheader":
                path.write_text("\n".join(f"{v:.17g}" for v in values) + "\n")
            else:
                pq.write_table(pa.table({"loss": values}), path)
            paths.append(str(path))
        out = tmp_path / f"{fmt}.json"
        assert (
            main(
                [
                    "epsilon",
                    "--train-losses",
                    paths[0],
                    "--population-losses",
                    paths[1],
                    "--method",
                    "empirical",
                    "--json",
                    str(out),
                ]
            )
            == 0
        )
        results.append(json.loads(out.read_text()))
    assert len({r["epsilon_star"] for r in results}) == 1
    # Default delta is 1/(n ln n) for the 500 training losses.
    assert results[0]["delta"] == pytest.approx(1 / (500 * np.log(500)))


def test_json_to_stdout(loss_files: tuple[Path, Path]) -> None:
    done = run(
        "epsilon",
        "--train-losses",
        str(loss_files[0]),
        "--population-losses",
        str(loss_files[1]),
        "--method",
        "empirical",
        "--rate-window",
        "0.001,0.999",
        "--json",
        "-",
    )
    assert done.returncode == 0
    assert json.loads(done.stdout)["rate_window"] == [0.001, 0.999]


def test_poor_fit_is_a_one_line_warning(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    bimodal = np.concatenate([rng.normal(0, 0.1, 2000), rng.normal(5, 0.1, 2000)])
    np.save(tmp_path / "a.npy", bimodal)
    np.save(tmp_path / "b.npy", bimodal + 0.5)
    done = run(
        "epsilon",
        "--train-losses",
        str(tmp_path / "a.npy"),
        "--population-losses",
        str(tmp_path / "b.npy"),
        "--method",
        "parametric",
    )
    assert done.returncode == 0
    assert "epsstar: warning: the normal fit to the train losses is poor" in done.stderr
    assert "POOR FIT" in done.stdout
    assert "Traceback" not in done.stderr


def bad_inputs(tmp_path: Path) -> list[tuple[list[str], str]]:
    good = tmp_path / "good.npy"
    np.save(good, np.random.default_rng(0).normal(size=200))
    np.save(tmp_path / "nan.npy", np.array([1.0, np.nan, 2.0] * 30))
    np.save(tmp_path / "matrix.npy", np.ones((10, 3)))
    np.save(tmp_path / "few.npy", np.ones(5))
    np.save(tmp_path / "equal.npy", np.full(100, 0.25))
    (tmp_path / "text.csv").write_text("loss\n1.0\nabc\n2.0\n")
    (tmp_path / "two.csv").write_text("a,b\n1,2\n3,4\n")
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "broken.npy").write_bytes(b"\x93NUMPY garbage")
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")
    g = str(good)
    return [
        (
            ["--train-losses", str(tmp_path / "missing.npy"), "--population-losses", g],
            "--train-losses must exist and be a file. Found '",
        ),
        (
            ["--train-losses", str(tmp_path / "x.txt"), "--population-losses", g],
            "--train-losses must end in one of .csv, .parquet, .pq, .npz, .npy. Found '",
        ),
        (
            ["--train-losses", str(tmp_path / "nan.npy"), "--population-losses", g],
            "nan.npy: column '0' must be finite. Found nan at row 1.",
        ),
        (
            ["--train-losses", str(tmp_path / "matrix.npy"), "--population-losses", g],
            "must hold a 1-D array or one column. Found shape (10, 3).",
        ),
        (
            ["--train-losses", str(tmp_path / "few.npy"), "--population-losses", g],
            "at least 100 values. Found 5",
        ),
        (
            [
                "--train-losses",
                str(tmp_path / "equal.npy"),
                "--population-losses",
                str(tmp_path / "equal.npy"),
            ],
            "all losses are equal",
        ),
        (
            ["--train-losses", str(tmp_path / "text.csv"), "--population-losses", g],
            "text.csv: column 'loss' must be numeric. Found 'abc' at row 1.",
        ),
        (
            ["--train-losses", str(tmp_path / "two.csv"), "--population-losses", g],
            "must have exactly one column. Found 2: 'a', 'b'.",
        ),
        (
            ["--train-losses", str(tmp_path / "empty.csv"), "--population-losses", g],
            "empty.csv: must hold a header line and rows. Found an empty file.",
        ),
        (
            ["--train-losses", str(tmp_path / "broken.npy"), "--population-losses", g],
            "broken.npy: must be a readable .npy array. Found: ",
        ),
        (
            ["--train-losses", str(tmp_path / "broken.parquet"), "--population-losses", g],
            "broken.parquet: must be a readable Parquet file. Found: ",
        ),
        (["--train-losses", g, "--population-losses", g, "--delta", "0.9"], "Found 0.9"),
        (["--train-losses", g, "--population-losses", g, "--method", "magic"], "invalid choice"),
        (["--train-losses", g, "--population-losses", g, "--rate-window", "0.1"], "LOW,HIGH"),
        (
            [
                "--train-losses",
                g,
                "--population-losses",
                g,
                "--json",
                str(tmp_path / "no" / "dir.json"),
            ],
            "cannot write",
        ),
        (["--population-losses", g], "required"),
    ]


def invoke(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run the CLI in this process (argparse usage errors exit through SystemExit)."""
    try:
        code = main(args)
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for args, message in bad_inputs(tmp_path):
        code, _, err = invoke(["epsilon", *args], capsys)
        assert code == 2, (args, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 or lines[0].startswith("usage:"), err
        assert message in err, (message, err)
    assert not (tmp_path / "no").exists()


def test_errors_reach_the_terminal_without_traceback(tmp_path: Path) -> None:
    done = run(
        "epsilon", "--train-losses", str(tmp_path / "missing.npy"), "--population-losses", "x.npy"
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr


def test_unwritable_output_leaves_nothing(loss_files: tuple[Path, Path], tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # root ignores permissions; a directory in place of the file still fails to be replaced.
        target = tmp_path / "taken.json"
        target.mkdir()
    else:  # pragma: no cover
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        target = locked / "out.json"
    code = main(
        [
            "epsilon",
            "--train-losses",
            str(loss_files[0]),
            "--population-losses",
            str(loss_files[1]),
            "--json",
            str(target),
        ]
    )
    assert code == 2
    assert [p.name for p in target.parent.iterdir() if p.name.startswith(".")] == []


def test_simulate_quick_prints_the_table() -> None:
    done = run("simulate", "--quick")
    assert done.returncode == 0, done.stderr
    assert "true eps*" in done.stdout
    assert "4.319" in done.stdout  # true Epsilon* for d = 1, delta = 1e-5 from the Gamma CDFs


def test_help_and_version() -> None:
    done = run("--help")
    assert done.returncode == 0
    assert "epsilon" in done.stdout
    assert "demo" in done.stdout
    assert run("--version").stdout.startswith("epsstar ")
    assert run().returncode == 2


def test_tails_method_with_a_bootstrap_interval(
    loss_files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "epsilon",
            "--train-losses",
            str(loss_files[0]),
            "--population-losses",
            str(loss_files[1]),
            "--method",
            "tails",
            "--interval",
            "0.9",
            "--n-bootstrap",
            "20",
            "--json",
            "-",
        ]
    )
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["method"] == "tails"
    interval = payload["epsilon_star_interval"]
    assert interval["level"] == 0.9
    assert interval["n_bootstrap"] == 20
    assert interval["low"] <= interval["high"]


def test_crossfit_method(loss_files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    args = ["epsilon", "--train-losses", str(loss_files[0])]
    args += ["--population-losses", str(loss_files[1]), "--method", "tails-crossfit"]
    assert main([*args, "--json", "-"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["method"] == "tails-crossfit"
    assert payload["epsilon_star"] == max(payload["crossfit_scores"])
    assert payload["plug_in_epsilon_star"] >= 0.0
