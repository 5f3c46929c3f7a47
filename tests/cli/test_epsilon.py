"""``epsstar epsilon`` and ``epsstar simulate`` as a user runs them.

Most tests call ``epsstar.cli.main`` in this process; a few run whole processes: the
console script, ``python -m epsstar.cli``, an error reaching the terminal, and Ctrl-C.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import epsstar
from epsstar.cli import main
from epsstar.cli.common.options import bootstrap_option, estimator_config
from epsstar.cli.main import build_parser
from epsstar.statistics.estimators.methods import (
    Bootstrap,
    Empirical,
    EstimatorConfig,
    Parametric,
    Tails,
    TailsShapeTested,
)
from tests.conftest import invoke


@pytest.fixture
def loss_files(tmp_path: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    train, population = tmp_path / "train.npy", tmp_path / "population.npy"
    np.save(train, rng.normal(0.0, 1.0, 2000))
    np.save(population, rng.normal(1.0, 1.0, 2000))
    return train, population


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m epsstar.cli ARGS`` in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "epsstar.cli", *args], capture_output=True, text=True, check=False
    )


def test_epsilon_writes_json_and_summary(
    loss_files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "result.json"
    code = main(
        [
            "epsilon",
            "--train-losses",
            str(loss_files[0]),
            "--population-losses",
            str(loss_files[1]),
            "--delta",
            "1e-5",
            "--json",
            str(out),
        ]
    )
    stdout = capsys.readouterr().out
    assert code == 0
    assert "Epsilon* = " in stdout
    payload = json.loads(out.read_text())
    assert payload["delta"] == 1e-5
    assert payload["n_train"] == 2000
    assert payload["method"] == "tails-shape-tested"  # the default estimator
    assert payload["epsilon_star"] > 1
    assert f"{payload['epsilon_star']:.4f}" in stdout
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


def test_json_to_stdout(loss_files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
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
        ]
    )
    assert code == 0
    assert json.loads(capsys.readouterr().out)["rate_window"] == [0.001, 0.999]


def test_poor_fit_is_a_one_line_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(2)
    bimodal = np.concatenate([rng.normal(0, 0.1, 2000), rng.normal(5, 0.1, 2000)])
    np.save(tmp_path / "a.npy", bimodal)
    np.save(tmp_path / "b.npy", bimodal + 0.5)
    code = main(
        [
            "epsilon",
            "--train-losses",
            str(tmp_path / "a.npy"),
            "--population-losses",
            str(tmp_path / "b.npy"),
            "--method",
            "parametric",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0
    lines = captured.err.splitlines()
    poor = "epsstar: warning: the normal fit to the train losses is poor"
    assert any(line.startswith(poor) for line in lines), captured.err
    assert all(line.startswith("epsstar: warning: ") for line in lines), captured.err
    assert "POOR FIT" in captured.out


def write_bad_files(folder: Path) -> None:
    np.save(folder / "good.npy", np.random.default_rng(0).normal(size=200))
    np.save(folder / "nan.npy", np.array([1.0, np.nan, 2.0] * 30))
    np.save(folder / "matrix.npy", np.ones((10, 3)))
    np.save(folder / "few.npy", np.ones(5))
    np.save(folder / "equal.npy", np.full(100, 0.25))
    (folder / "text.csv").write_text("loss\n1.0\nabc\n2.0\n")
    (folder / "two.csv").write_text("a,b\n1,2\n3,4\n")
    (folder / "empty.csv").write_text("")
    (folder / "broken.npy").write_bytes(b"\x93NUMPY garbage")
    (folder / "broken.parquet").write_bytes(b"PAR1 not really")


GOOD = ["--population-losses", "good.npy"]
# (name, arguments of `epsstar epsilon` with file names relative to a folder, message).
BAD_INPUTS = [
    (
        "missing file",
        ["--train-losses", "missing.npy", *GOOD],
        "--train-losses must exist and be a file. Found '",
    ),
    (
        "unknown type",
        ["--train-losses", "x.txt", *GOOD],
        "--train-losses must end in one of .csv, .parquet, .pq, .npz, .npy. Found '",
    ),
    (
        "nan",
        ["--train-losses", "nan.npy", *GOOD],
        "nan.npy: column '0' must be finite. Found nan at row 1.",
    ),
    (
        "matrix",
        ["--train-losses", "matrix.npy", *GOOD],
        "must hold a 1-D array or one column. Found shape (10, 3).",
    ),
    (
        "too few",
        ["--train-losses", "few.npy", *GOOD],
        "at least 100 values for the tails-shape-tested method (--method empirical needs 1). "
        "Found 5",
    ),
    (
        "all equal",
        ["--train-losses", "equal.npy", "--population-losses", "equal.npy"],
        "all losses are equal",
    ),
    (
        "text",
        ["--train-losses", "text.csv", *GOOD],
        "text.csv: column 'loss' must be numeric. Found 'abc' at row 1.",
    ),
    (
        "two columns",
        ["--train-losses", "two.csv", *GOOD],
        "must have exactly one column. Found 2: 'a', 'b'.",
    ),
    (
        "empty",
        ["--train-losses", "empty.csv", *GOOD],
        "empty.csv: must hold a header line and rows. Found an empty file.",
    ),
    (
        "broken npy",
        ["--train-losses", "broken.npy", *GOOD],
        "broken.npy: must be a readable .npy array. Found: ",
    ),
    (
        "broken parquet",
        ["--train-losses", "broken.parquet", *GOOD],
        "broken.parquet: must be a readable Parquet file. Found: ",
    ),
    ("delta", ["--train-losses", "good.npy", *GOOD, "--delta", "0.9"], "Found 0.9"),
    ("method", ["--train-losses", "good.npy", *GOOD, "--method", "magic"], "invalid choice"),
    ("window", ["--train-losses", "good.npy", *GOOD, "--rate-window", "0.1"], "LOW,HIGH"),
    (
        "folder is a file",
        ["--train-losses", "good.npy", *GOOD, "--json", "good.npy/dir.json"],
        "is a file, not a folder",
    ),
    (
        "output is an input",
        ["--train-losses", "good.npy", *GOOD, "--json", "good.npy"],
        "--json would overwrite --train-losses",
    ),
    (
        "window without empirical",
        ["--train-losses", "good.npy", *GOOD, "--rate-window", "0.001,0.999"],
        "rate_window applies to the empirical method only. Found method='tails-shape-tested'.",
    ),
    (
        "window order",
        [
            *("--train-losses", "good.npy", *GOOD, "--method", "empirical"),
            *("--rate-window", "0.5,0.1"),
        ],
        "rate_window high must be in (0.5, 1]. Found 0.1.",
    ),
    (
        "interval",
        ["--train-losses", "good.npy", *GOOD, "--interval", "1.5"],
        "--interval must be in (0, 1). Found 1.5.",
    ),
    (
        "bootstrap",
        ["--train-losses", "good.npy", *GOOD, "--interval", "0.9", "--n-bootstrap", "1"],
        "--n-bootstrap must be an integer ≥ 2. Found 1.",
    ),
    ("no train", GOOD, "required"),
]
FILE_OPTIONS = {"--train-losses", "--population-losses", "--json"}


@pytest.mark.parametrize(
    ("args", "message"), [case[1:] for case in BAD_INPUTS], ids=[case[0] for case in BAD_INPUTS]
)
def test_bad_input_is_one_line_and_exit_2(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_bad_files(tmp_path)
    paths = [
        str(tmp_path / word) if previous in FILE_OPTIONS else word
        for previous, word in zip(["", *args], args, strict=False)
    ]
    code, _, err = invoke(["epsilon", *paths], capsys)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert message in err
    assert not (tmp_path / "no").exists()


def test_errors_reach_the_terminal_without_traceback(tmp_path: Path) -> None:
    """A whole process (``python -m epsstar.cli``): one line on stderr, exit code 2."""
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


def test_simulate_quick_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--quick"]) == 0
    stdout = capsys.readouterr().out
    assert "true eps*" in stdout
    assert "4.319" in stdout  # true Epsilon* for d = 1, delta = 1e-5 from the Gamma CDFs


def test_help_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, _ = invoke(["--help"], capsys)
    assert code == 0
    assert "epsilon" in stdout
    assert "demo" in stdout
    code, stdout, _ = invoke(["--version"], capsys)
    assert code == 0
    assert stdout == f"epsstar {epsstar.__version__}\n"
    code, _, stderr = invoke([], capsys)
    assert code == 2
    assert stderr == "epsstar: error: the following arguments are required: COMMAND\n"


def console_script() -> Path:
    """The ``epsstar`` command installed beside this interpreter."""
    script = Path(sysconfig.get_path("scripts")) / "epsstar"
    assert script.is_file(), f"the console script is not installed: {script}"
    return script


def test_console_script_runs_the_cli() -> None:
    done = subprocess.run(
        [console_script(), "--version"], capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout) == (0, f"epsstar {epsstar.__version__}\n")


def test_module_entry_point_runs_the_cli() -> None:
    done = run("--version")
    assert (done.returncode, done.stdout) == (0, f"epsstar {epsstar.__version__}\n")


def test_ctrl_c_is_one_line_and_exit_130() -> None:
    """SIGINT while a command runs: "epsstar: interrupted", exit code 130, no traceback."""
    process = subprocess.Popen(
        [console_script(), "simulate"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as on a terminal, even where the tests run with SIGINT ignored (a
        # background job of a non-interactive shell), which the child would inherit.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert process.stdout is not None
    assert process.stdout.readline().startswith("Epsilon* of simulated losses")  # it runs
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, (stdout, stderr)
    assert stderr.endswith("epsstar: interrupted\n"), stderr  # after the progress dots, if any
    assert "Traceback" not in stderr


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


@pytest.mark.parametrize(
    ("options", "config", "interval"),
    [
        ([], TailsShapeTested(), None),
        (
            ["--method", "parametric", "--family", "gmm", "--search", "grid"],
            Parametric(family="gmm", search="grid"),
            None,
        ),
        (
            ["--method", "empirical", "--rate-window", "0.001,0.999"],
            Empirical(rate_window=(0.001, 0.999)),
            None,
        ),
        (
            ["--method", "tails", "--family", "gmm", "--interval", "0.9", "--n-bootstrap", "50"],
            Tails(),
            Bootstrap(0.9, 50),
        ),
    ],
)
def test_arguments_become_the_configuration(
    options: list[str], config: EstimatorConfig, interval: Bootstrap | None
) -> None:
    args = build_parser().parse_args(
        ["epsilon", "--train-losses", "a.npy", "--population-losses", "b.npy", *options]
    )
    assert estimator_config(args) == config
    assert bootstrap_option(args) == interval


def test_summary_reads_the_result(loss_files: tuple[Path, Path], tmp_path: Path) -> None:
    """The printed summary is the result's, field by field (to_dict only feeds the JSON)."""
    from epsstar.cli.commands.epsilon import _format
    from epsstar.statistics.estimators.estimator import estimate

    train, population = (np.load(path) for path in loss_files)
    result = estimate(train, population, Parametric(), delta=1e-3, interval=Bootstrap(0.9, 20))
    text = _format(result)
    assert text.splitlines()[0] == (
        f"Epsilon* = {result.epsilon:.4f}  (delta = 0.001, parametric, normal)"
    )
    assert f"FPR = {result.fpr:.4g}, FNR = {result.fnr:.4g}" in text
    assert "90% bootstrap interval (percentile, 20 resamples)" in text
    assert ("not the shape of the extrapolated tail" in text) == result.tail_extrapolated
    assert ("sampling spread, not a calibrated bound" in text) != result.tail_extrapolated
    assert "records: 2,000 training, 2,000 population" in text
    assert text.count("hold-out KS p = ") == 2
    nothing = estimate(train, train.copy(), Empirical(), delta=1e-3)
    assert "no admissible threshold beats random guessing" in _format(nothing)
