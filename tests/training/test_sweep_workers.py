"""``epsstar sweep --workers N``: the models of ``--workers 1``, resumable, and a worker that
dies stops the sweep in one line with the finished models kept."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from epsstar.cli import main
from epsstar.exceptions import InvalidInputError
from epsstar.training.runs.sweep import SweepCompute, load_sweep_config, run_sweep
from tests.benchmarks_.scripts import imported

#: The benchmark's comparison of two run folders, which the test's promise shares.
BENCHMARK = imported(
    Path(__file__).resolve().parents[2] / "benchmarks" / "sweep_workers.py", "sweep_workers_bench"
)

pytest.importorskip("torch")

CONFIG = """
data = "{train}"
label_column = "label"
population = "{population}"
repeats = 2
seed = 10

[model]
hidden = [6]

[baseline]
epochs = [6]
batch_size = 50

[dp]
target_epsilons = [2, 4]
accountant = "rdp"          # a quick σ search
batch_sizes = [50]
epochs = 2
"""
TWO_WORKERS = SweepCompute(workers=2)
#: Every run of the grid: 3 strategies × 2 repeats (two σ searches, side by side with workers).
RUNS = [
    f"{label}/{repeat}"
    for label in ("nonprivate-e6", "dp-eps2-C1-B50-mex-e2", "dp-eps4-C1-B50-mex-e2")
    for repeat in (0, 1)
]


@pytest.fixture(scope="module")
def config_file(csv_files: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sweep") / "sweep.toml"
    path.write_text(CONFIG.format(train=csv_files[0], population=csv_files[1]))
    return path


@pytest.fixture(scope="module")
def one_worker(config_file: Path) -> Path:
    """The grid trained in this process, one run after another."""
    out = config_file.parent / "one"
    assert run_sweep(load_sweep_config(config_file), out, progress=False).trained == len(RUNS)
    return out


def _assert_same_models(got: Path, expected: Path) -> None:
    for run in RUNS:
        differing = BENCHMARK.run_differences(got / run, expected / run)
        assert not differing, f"{run}: differs at {differing}"
    assert (got / "manifest.csv").read_text().replace(str(got), "") == (
        expected / "manifest.csv"
    ).read_text().replace(str(expected), "")


@pytest.mark.slow
def test_two_workers_train_the_models_of_one(one_worker: Path, config_file: Path) -> None:
    """Bit for bit: the ONNX files, the TorchScript weights, ``training.json`` but its
    timings (σ searched in the workers too), and the manifest; one line per finished run,
    from this process."""
    lines: list[str] = []
    out = config_file.parent / "two"
    config = load_sweep_config(config_file)
    outcome = run_sweep(config, out, progress=False, log=lines.append, compute=TWO_WORKERS)
    assert (outcome.trained, outcome.skipped) == (len(RUNS), 0)
    _assert_same_models(out, one_worker)
    done = [line for line in lines if "done in" in line]
    assert sorted(line.split("]")[0] for line in done) == sorted(
        f"[{k}/{len(RUNS)}" for k in range(1, len(RUNS) + 1)
    )
    again = run_sweep(config, out, progress=False, compute=TWO_WORKERS)
    assert (again.trained, again.skipped) == (0, len(RUNS))


def _kill_a_worker_after_the_first_model(out: Path, killed: list[int]) -> None:
    """SIGKILL one of this process's worker processes once a model is finished in ``out``."""
    while not any(out.glob("*/*/training.json")):
        threading.Event().wait(0.02)
    for child in multiprocessing.active_children():
        if child.pid is not None:
            os.kill(child.pid, signal.SIGKILL)
            killed.append(child.pid)
            return


@pytest.mark.slow
def test_a_worker_that_dies_stops_the_sweep_in_one_line_and_a_rerun_resumes(
    one_worker: Path, config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = config_file.parent / "killed"
    killed: list[int] = []
    killer = threading.Thread(target=_kill_a_worker_after_the_first_model, args=(out, killed))
    killer.start()
    code = main(["sweep", str(config_file), "--out", str(out), "--workers", "2", "--quiet"])
    killer.join()
    assert killed
    error = capsys.readouterr().err
    assert code == 3, error
    assert error.count("\n") == 1
    assert error.startswith("epsstar sweep: error: a worker process died while training ")
    assert any(f"{run.split('/')[0]} repeat {run.split('/')[1]}" in error for run in RUNS), error
    assert "run the sweep again" in error
    finished = sorted(str(p.parent.relative_to(out)) for p in out.glob("*/*/training.json"))
    assert 1 <= len(finished) < len(RUNS)
    kept = {run: (out / run / "model.onnx").stat().st_mtime_ns for run in finished}
    # Running the sweep again trains the other models only: those of one worker.
    assert main(["sweep", str(config_file), "--out", str(out), "--workers", "2", "--quiet"]) == 0
    assert {run: (out / run / "model.onnx").stat().st_mtime_ns for run in finished} == kept
    _assert_same_models(out, one_worker)


def _as_a_terminal_starts_it() -> None:
    """In the child before it runs: Ctrl-C neither blocked nor ignored, as a shell leaves it,
    whatever this test process inherited or a library left in its main thread."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _signal_masks(pid: int) -> list[str]:
    """The blocked, ignored and caught signal masks of ``pid`` (for a failure's message)."""
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        return []
    lines = status.read_text().splitlines()
    return [line for line in lines if line.startswith(("SigBlk", "SigIgn", "SigCgt"))]


@pytest.mark.slow
def test_ctrl_c_stops_the_workers_too(config_file: Path) -> None:
    """SIGINT to the whole process group, as a terminal sends it, once a model is finished:
    exit 130 and one line, and no worker trains on after the sweep stopped."""
    out = config_file.parent / "interrupted"
    # Eight repeats of each strategy (24 runs): the sweep is still training when the signal
    # comes, however late a loaded machine lets this process see the first finished model.
    longer = config_file.parent / "longer.toml"
    longer.write_text(config_file.read_text().replace("repeats = 2", "repeats = 8"))
    command = [sys.executable, "-m", "epsstar", "sweep", str(longer), "--out", str(out)]
    sweep = subprocess.Popen(
        [*command, "--workers", "2", "--quiet"],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=_as_a_terminal_starts_it,
    )
    while not any(out.glob("*/*/training.json")):
        assert sweep.poll() is None, sweep.communicate()
        threading.Event().wait(0.02)
    masks = _signal_masks(sweep.pid)
    os.killpg(sweep.pid, signal.SIGINT)
    _, error = sweep.communicate(timeout=120)
    trained = len(list(out.glob("*/*/training.json")))
    assert (sweep.returncode, error) == (130, "epsstar: interrupted\n"), (masks, trained)
    finished = sorted(out.glob("*/*/training.json"))
    threading.Event().wait(3.0)
    assert sorted(out.glob("*/*/training.json")) == finished
    assert len(finished) < 4 * len(RUNS)


@pytest.mark.parametrize("value", ["0", "-3"])
def test_workers_below_one_is_one_line_and_exit_2(
    config_file: Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = config_file.parent / f"refused{value}"
    assert main(["sweep", str(config_file), "--out", str(out), "--workers", value]) == 2
    assert capsys.readouterr().err == (
        f"epsstar sweep: error: --workers must be an integer ≥ 1. Found {value}.\n"
    )
    assert not out.exists()


def test_no_workers_is_refused_in_one_line() -> None:
    with pytest.raises(InvalidInputError, match=r"^workers must be an integer ≥ 1\. Found 0\.$"):
        SweepCompute(workers=0)
