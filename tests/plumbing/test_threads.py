"""The audit's intra-op threads: one choice applied to torch and to every onnxruntime
session, chosen by the trainer's rule (``EPSSTAR_THREADS`` or ``--threads``, else the idle
cores)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from epsstar.audit.model.loading import ModelFile
from epsstar.cli import main
from epsstar.plumbing.runtime import threads

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")

MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "models"


@pytest.fixture
def restored() -> Iterator[None]:
    """This process's choice and torch's threads as they were."""
    chosen, torch_threads = list(threads._chosen), torch.get_num_threads()
    yield
    threads._chosen[:] = chosen
    torch.set_num_threads(torch_threads)


def _session_threads(model: object) -> tuple[int, int]:
    options = model.__dict__["_session"].get_session_options()  # the loader's own session
    return options.intra_op_num_threads, options.inter_op_num_threads


@pytest.mark.usefixtures("restored")
def test_the_choice_reaches_torch_and_onnxruntime() -> None:
    torch.set_num_threads(2)
    threads.use_threads(1)
    assert threads.chosen_threads() == 1
    assert torch.get_num_threads() == 1  # torch imported: set at once
    assert _session_threads(ModelFile(MODELS / "binary_mlp.onnx").load().model) == (1, 1)
    torch.set_num_threads(2)
    ModelFile(MODELS / "binary_mlp.pt").load()
    assert torch.get_num_threads() == 1  # and again when a torch model is loaded


@pytest.mark.usefixtures("restored")
def test_the_trainers_threads_are_the_audits_choice() -> None:
    """The trainer's setter makes the one choice the audit keeps: torch's threads now, and
    the onnxruntime sessions and the record of the threads after it."""
    from epsstar.plumbing.runtime.threads import apply_threads

    torch.set_num_threads(2)
    threads._chosen.clear()
    apply_threads(1)
    assert torch.get_num_threads() == 1
    assert threads.chosen_threads() == 1
    assert _session_threads(ModelFile(MODELS / "binary_mlp.onnx").load().model) == (1, 1)


@pytest.mark.usefixtures("restored")
def test_without_a_choice_the_libraries_keep_their_defaults() -> None:
    threads._chosen.clear()
    assert threads.chosen_threads() is None
    assert _session_threads(ModelFile(MODELS / "binary_mlp.onnx").load().model) == (0, 0)


@pytest.mark.usefixtures("restored")
def test_audit_threads_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["audit", str(MODELS / "binary_mlp.onnx"), "--train", str(MODELS / "binary_train.csv")]
    argv += ["--population", str(MODELS / "binary_population.csv"), "--label-column", "label"]
    argv += ["--json", str(tmp_path / "result.json"), "--quiet"]
    assert main([*argv, "--threads", "0"]) == 2
    assert capsys.readouterr().err == (
        "epsstar audit: error: --threads must be a positive integer. Found '0'.\n"
    )
    assert main([*argv, "--threads", "1"]) == 0
    assert threads.chosen_threads() == 1
    # The JSON says which threads ran the model: the last digits of scores can depend on it.
    assert json.loads((tmp_path / "result.json").read_text())["provenance"]["threads"] == 1


@pytest.mark.parametrize(
    ("load", "runnable", "busy"),
    [
        (1.9, 1, 0),  # work that ended a moment ago is still in the one-minute average
        (1.9, 2, 1),  # one other task runs now, and the average agrees
        (0.4, 3, 0),  # others have only just started: the average decides, as before
        (7.5, 9, 3),  # never more than the cores less this process's own
        (1.9, None, 1),  # no instantaneous count (not Linux): the average alone
    ],
)
def test_busy_cores_are_the_load_average_capped_by_what_runs_now(
    monkeypatch: pytest.MonkeyPatch, load: float, runnable: int | None, busy: int
) -> None:
    monkeypatch.setattr("os.getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(threads, "_runnable_now", lambda: runnable)
    assert threads._busy_cores(4) == busy


def test_the_runnable_count_counts_this_process() -> None:
    runnable = threads._runnable_now()
    if not Path("/proc/loadavg").is_file():
        assert runnable is None
    else:
        assert runnable is not None
        assert runnable >= 1
