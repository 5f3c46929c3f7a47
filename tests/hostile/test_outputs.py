"""The command line's outputs under hostile conditions: all of a run's files or none.

Every output location is checked before the work starts; the files of one run are
written together once it has finished; a bad location, a failure or Ctrl-C leaves no
file and no temporary (exit 2 or 130, one line, no traceback); a closed standard output
ends the command quietly (exit 141). Tests that could replace an input copy it into
``tmp_path`` first, so that a regression cannot touch the checkout.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from epsstar.cli import main
from epsstar.cli.exit_codes import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_USAGE,
)
from epsstar.exceptions import InputFileError
from epsstar.plumbing.files.staging import Outputs
from tests.conftest import invoke
from tests.hostile.interrupting import cli_process

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "fixtures" / "models"
LOSSES = ROOT / "fixtures" / "losses"


# --- helpers -------------------------------------------------------------------------------------


def one_line_error(err: str) -> str:
    """The single line of an error; fails on a traceback or several lines."""
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def listing(folder: Path) -> list[str]:
    """Every path under ``folder`` (hidden ones too), relative, sorted."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def run_process(args: list[str], **options: Any) -> subprocess.CompletedProcess[str]:
    options.setdefault("capture_output", True)
    return subprocess.run(
        [sys.executable, "-m", "epsstar.cli", *args],
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        **options,
    )


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    """Copies of a fixture model, its data and the example losses in ``tmp_path/in``."""
    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("binary_logreg.onnx", "binary_train.csv", "binary_population.csv"):
        shutil.copy(MODELS / name, folder / name)
    for name in ("train.npy", "population.npy"):
        shutil.copy(LOSSES / name, folder / name)
    return folder


def audit_args(folder: Path) -> list[str]:
    return [
        "audit",
        str(folder / "binary_logreg.onnx"),
        "--train",
        str(folder / "binary_train.csv"),
        "--population",
        str(folder / "binary_population.csv"),
        "--label-column",
        "label",
        "--features",
        ",".join(f"x{i}" for i in range(8)),
        "--quiet",
        "--method",
        "empirical",
    ]


def epsilon_args(folder: Path) -> list[str]:
    return [
        "epsilon",
        "--train-losses",
        str(folder / "train.npy"),
        "--population-losses",
        str(folder / "population.npy"),
        "--method",
        "empirical",
    ]


def must_not_run(name: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"{name} ran although an output location is unusable")

    return refuse


# --- the Outputs unit ----------------------------------------------------------------------------


def test_outputs_appear_only_at_the_commit(tmp_path: Path) -> None:
    with Outputs() as outputs:
        first = outputs.file("--json", tmp_path / "a.json")
        second = outputs.file("--report", tmp_path / "deep" / "er" / "r.html")
        assert first.temporary.parent == tmp_path
        assert first.temporary.name.startswith(".a.json.")
        first.write_json({"x": 1})
        second.write_bytes(b"<html></html>")
        assert not (tmp_path / "a.json").exists()
        assert not (tmp_path / "deep" / "er" / "r.html").exists()
        outputs.commit()
    assert json.loads((tmp_path / "a.json").read_text()) == {"x": 1}
    assert (tmp_path / "deep" / "er" / "r.html").read_bytes() == b"<html></html>"
    assert listing(tmp_path) == ["a.json", "deep", "deep/er", "deep/er/r.html"]


def staged(work: Callable[[Outputs], object], inputs: Sequence[tuple[str, Path]] = ()) -> None:
    """Run ``work`` on the outputs of a run, then commit them."""
    with Outputs(inputs) as outputs:
        work(outputs)
        outputs.commit()


def test_leaving_without_a_commit_removes_everything_made(tmp_path: Path) -> None:
    (tmp_path / "old.json").write_text("old")

    def work(outputs: Outputs) -> None:
        outputs.file("--json", tmp_path / "old.json").write_bytes(b"new")
        outputs.file("--report", tmp_path / "new" / "folder" / "r.html").write_bytes(b"r")
        outputs.folder("--reports", tmp_path / "reports", ["a.html"])
        raise RuntimeError("the work failed")

    with pytest.raises(RuntimeError):
        staged(work)
    assert listing(tmp_path) == ["old.json"]
    assert (tmp_path / "old.json").read_text() == "old"


def test_an_interrupt_while_working_removes_everything(tmp_path: Path) -> None:
    def work(outputs: Outputs) -> None:
        outputs.file("--json", tmp_path / "out" / "a.json").write_bytes(b"{}")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        staged(work)
    assert listing(tmp_path) == []


def test_a_folder_of_files_is_moved_in_by_the_commit(tmp_path: Path) -> None:
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "kept.html").write_text("earlier run")
    with Outputs() as outputs:
        folder = outputs.folder("--reports", tmp_path / "reports", ["a.html", "b.html"])
        (folder.staging / "a.html").write_text("a")  # b.html is never written (a failed model)
        assert folder.path("a.html") == tmp_path / "reports" / "a.html"
        outputs.commit()
    assert listing(tmp_path) == ["reports", "reports/a.html", "reports/kept.html"]


@pytest.mark.parametrize(
    ("make", "path", "message"),
    [
        (lambda d: (d / "dir").mkdir(), "dir", "must name a file, not a folder"),
        (lambda d: (d / "f").write_text("x"), "f/out.json", "is a file, not a folder"),
        (lambda d: None, "-", "standard output, is not available"),
        (lambda d: None, "", "must name a file"),
        (lambda d: None, "x" * 300 + ".json", "longer than the 255 bytes"),
        (lambda d: None, "a\0b.json", "is not a usable path"),
    ],
    ids=["folder", "file as folder", "dash", "empty", "long name", "nul byte"],
)
def test_unusable_file_locations_are_refused(
    make: Callable[[Path], object], path: str, message: str, tmp_path: Path
) -> None:
    make(tmp_path)
    before = listing(tmp_path)
    target = path if path in ("", "-") else str(tmp_path / path)
    with pytest.raises(InputFileError, match=message) as caught, Outputs() as outputs:
        outputs.file("--json", target)
    assert "\n" not in str(caught.value)
    assert listing(tmp_path) == before


def test_a_device_is_never_replaced() -> None:
    with pytest.raises(InputFileError, match="not a device, pipe or socket"), Outputs() as outputs:
        outputs.file("--json", "/dev/full")
    assert Path("/dev/full").is_char_device()


def test_no_output_replaces_an_input_under_any_name(tmp_path: Path) -> None:
    data = tmp_path / "train.csv"
    data.write_text("label\n1\n")
    os.link(data, tmp_path / "hard.csv")
    (tmp_path / "soft.csv").symlink_to(data)
    (tmp_path / "sub").mkdir()
    for name in ("train.csv", "hard.csv", "soft.csv", "sub/../train.csv"):
        with (
            pytest.raises(InputFileError, match="would overwrite --train, an input"),
            Outputs([("--train", data)]) as outputs,
        ):
            outputs.file("--json", tmp_path / name)
    assert data.read_text() == "label\n1\n"


def test_folders_and_globs_stand_for_every_file_they_hold(tmp_path: Path) -> None:
    parts = tmp_path / "parts"
    (parts / "deep").mkdir(parents=True)
    for name in ("part.0.parquet", "deep/part.1.parquet"):
        (parts / name).write_bytes(b"rows")
    (parts / "loop").symlink_to(parts)  # a linked folder is visited once
    for given in (parts, f"{parts}/*.parquet", f"{parts}/**/*.parquet", parts.as_uri()):
        for name in ("part.0.parquet", "deep/part.1.parquet"):
            if "*" in str(given) and "**" not in str(given) and "deep" in name:
                continue
            with (
                pytest.raises(InputFileError, match="would overwrite --train, an input"),
                Outputs([("--train", given)]) as outputs,
            ):
                outputs.file("--json", parts / name)
    assert (parts / "part.0.parquet").read_bytes() == b"rows"
    with Outputs([("--train", "s3://bucket/train/")]) as outputs:  # no local file
        outputs.file("--json", tmp_path / "out.json")


def test_inputs_known_after_the_work_are_checked_before_the_commit(tmp_path: Path) -> None:
    sidecar = tmp_path / "model.onnx.data"
    sidecar.write_bytes(b"weights")
    with Outputs([("MODEL", tmp_path / "model.onnx")]) as outputs:
        outputs.file("--json", sidecar)
        folder = outputs.folder("--reports", tmp_path / "reports", ["a.html"])
        with pytest.raises(InputFileError, match="--json would overwrite the model's file"):
            outputs.add_inputs([("the model's file", sidecar)])
        assert folder.staging.is_dir()
    assert sidecar.read_bytes() == b"weights"
    assert listing(tmp_path) == ["model.onnx.data"]


def test_audit_never_overwrites_the_models_external_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import onnx
    from onnx import numpy_helper

    folder = tmp_path / "in"
    folder.mkdir()
    model = folder / "model.onnx"
    proto = onnx.load(str(MODELS / "binary_mlp.onnx"))
    for tensor in proto.graph.initializer:  # as raw bytes, which onnx can store outside
        tensor.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(tensor), tensor.name))
    onnx.save(
        proto, str(model), save_as_external_data=True, all_tensors_to_one_file=True,
        location="model.onnx.data", size_threshold=0,
    )  # fmt: skip
    weights = (folder / "model.onnx.data").read_bytes()
    argv = ["audit", str(model), "--label-column", "label", "--quiet"]
    argv += ["--train", str(MODELS / "binary_train.csv")]
    argv += ["--population", str(MODELS / "binary_population.csv")]
    for option in ("--json", "--report"):
        code, _, err = invoke([*argv, option, str(folder / "model.onnx.data")], capsys)
        assert code == EXIT_USAGE
        assert "Traceback" not in err
        line = err.strip().splitlines()[-1]  # after the warning that columns go by position
        assert f"{option} would overwrite the model's file, an input of this run" in line
        assert (folder / "model.onnx.data").read_bytes() == weights
        assert listing(folder) == ["model.onnx", "model.onnx.data"]


def test_two_outputs_cannot_share_a_path(tmp_path: Path) -> None:
    cases: list[tuple[Callable[[Outputs], object], str]] = [
        (
            lambda o: (
                o.file("--json", tmp_path / "same"),
                o.file("--report", tmp_path / "./same"),
            ),
            "--report and --json name the same file",
        ),
        (
            lambda o: (o.file("--json", tmp_path / "o"), o.file("--report", tmp_path / "o" / "r")),
            "--report and --json would need one path as a file and as a folder",
        ),
        (
            lambda o: (o.file("--report", tmp_path / "o" / "r"), o.file("--json", tmp_path / "o")),
            "--json and --report would need one path as a file and as a folder",
        ),
        (
            lambda o: (
                o.file("--json", tmp_path / "reports" / "a.html"),
                o.folder("--reports", tmp_path / "reports", ["a.html"]),
            ),
            "--reports and --json name the same file; each needs its own. Found",
        ),
        (
            lambda o: o.folder("--reports", tmp_path / "reports", ["a.html", "a.html"]),
            "--reports would write two files at the same path. Found",
        ),
        (
            lambda o: (o.file("--json", tmp_path / "x"), o.folder("--reports", tmp_path / "x", [])),
            "--reports and --json name the same path; each needs its own",
        ),
    ]
    for work, message in cases:
        with pytest.raises(InputFileError, match=re.escape(message)):
            staged(work)
        assert listing(tmp_path) == []


def test_a_file_inside_a_folder_output_is_fine(tmp_path: Path) -> None:
    with Outputs() as outputs:
        outputs.folder("--reports", tmp_path / "out", ["a.html"])
        outputs.file("--json", tmp_path / "out" / "results.json").write_bytes(b"{}")
        outputs.commit()
    assert listing(tmp_path) == ["out", "out/results.json"]


def test_an_unwritable_folder_is_found_before_the_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    def denied(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", denied)
    with (
        pytest.raises(InputFileError, match=r"--json: cannot write in .*\(Permission denied\)"),
        Outputs() as outputs,
    ):
        outputs.file("--json", tmp_path / "new" / "a.json")
    assert listing(tmp_path) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_refused(tmp_path: Path) -> None:  # pragma: no cover
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(InputFileError, match="Permission denied"), Outputs() as outputs:
        outputs.file("--json", locked / "a.json")
    assert list(locked.iterdir()) == []


def test_a_full_disk_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.json").write_text("previous")

    def full(descriptor: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    def work(outputs: Outputs) -> None:
        outputs.file("--report", tmp_path / "r.html").write_bytes(b"report")
        monkeypatch.setattr(os, "fsync", full)
        outputs.file("--json", tmp_path / "a.json").write_json({"x": 1})

    with pytest.raises(InputFileError) as caught:
        staged(work)
    target = str(tmp_path / "a.json")
    assert str(caught.value) == f"--json: cannot write (No space left on device). Found {target!r}."
    assert listing(tmp_path) == ["a.json"]
    assert (tmp_path / "a.json").read_text() == "previous"


def test_a_renderer_error_names_the_output_not_the_temporary(tmp_path: Path) -> None:
    def render(path: Path) -> None:
        raise InputFileError(f"cannot write {str(path)!r}: No space left on device.")

    with pytest.raises(InputFileError) as caught, Outputs() as outputs:
        outputs.file("--report", tmp_path / "r.html").write_with(render)
    assert str(caught.value) == (
        f"--report: cannot write {str(tmp_path / 'r.html')!r}: No space left on device."
    )
    assert listing(tmp_path) == []


def test_a_failed_rename_undoes_the_others(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text("previous a")

    def work(outputs: Outputs) -> None:
        outputs.file("--json", tmp_path / "a.json").write_bytes(b"new a")
        outputs.file("--new", tmp_path / "b.json").write_bytes(b"new b")
        outputs.file("--report", tmp_path / "r.html").write_bytes(b"new r")
        (tmp_path / "r.html").mkdir()  # appears while the work runs

    with pytest.raises(InputFileError, match="--report: cannot write") as caught:
        staged(work)
    assert "\n" not in str(caught.value)
    assert listing(tmp_path) == ["a.json", "r.html"]
    assert (tmp_path / "a.json").read_text() == "previous a"


def test_ctrl_c_during_the_renames_waits_until_they_are_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    replace = os.replace
    calls = []
    handler = signal.getsignal(signal.SIGINT)

    def interrupted_replace(source: Any, target: Any) -> None:
        if not calls:
            signal.raise_signal(signal.SIGINT)
        calls.append(target)
        replace(source, target)

    with Outputs() as outputs:
        for name in ("a.json", "b.json", "c.json"):
            outputs.file("--" + name, tmp_path / name).write_bytes(name.encode())
        monkeypatch.setattr(os, "replace", interrupted_replace)
        with pytest.raises(KeyboardInterrupt):
            outputs.commit()
    assert len(calls) == 3
    assert listing(tmp_path) == ["a.json", "b.json", "c.json"]
    assert signal.getsignal(signal.SIGINT) is handler  # restored


def test_permissions_follow_the_umask_or_the_file_replaced(tmp_path: Path) -> None:
    (tmp_path / "old.json").write_text("x")
    (tmp_path / "old.json").chmod(0o600)
    with Outputs() as outputs:
        outputs.file("--a", tmp_path / "old.json").write_bytes(b"y")
        outputs.file("--b", tmp_path / "new.json").write_bytes(b"z")
        outputs.commit()
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "old.json").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "new.json").stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_symbolic_link_is_written_through(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link.json").symlink_to(tmp_path / "real" / "a.json")
    with Outputs() as outputs:
        outputs.file("--json", tmp_path / "link.json").write_bytes(b"{}")
        outputs.commit()
    assert (tmp_path / "link.json").is_symlink()
    assert (tmp_path / "real" / "a.json").read_bytes() == b"{}"


# --- audit ---------------------------------------------------------------------------------------


AUDIT_LOCATIONS = {
    # name: (options, the telling part of the message); plain names are in tmp_path
    "second output unusable": (["--json", "out/a.json", "--report", "file/r.html"], "--report: "),
    "folder": (["--json", "folder"], "--json must name a file, not a folder"),
    "same file": (["--json", "same", "--report", "same"], "--report and --json name the same file"),
    "report to stdout": (["--report", "-"], "--report must name a file"),
    "device": (["--json", "/dev/full"], "must name a regular file, not a device"),
    "training data": (["--report", "in/binary_train.csv"], "--report would overwrite --train"),
    "model": (["--json", "in/binary_logreg.onnx"], "--json would overwrite MODEL"),
    "long name": (["--json", "x" * 256], "longer than the 255 bytes"),
}


@pytest.mark.parametrize(("options", "message"), AUDIT_LOCATIONS.values(), ids=AUDIT_LOCATIONS)
def test_audit_checks_its_outputs_before_the_audit(
    options: list[str],
    message: str,
    inputs: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import epsstar.audit.run

    monkeypatch.setattr(epsstar.audit.run, "audit", must_not_run("the audit"))
    (tmp_path / "file").write_text("x")
    (tmp_path / "folder").mkdir()
    before = listing(tmp_path)
    located = [
        str(tmp_path / word) if previous.startswith("--") and word[0] not in "-/" else word
        for previous, word in zip(["", *options], options, strict=False)
    ]
    code, out, err = invoke([*audit_args(inputs), *located], capsys)
    assert code == EXIT_USAGE
    assert out == ""
    line = one_line_error(err)
    assert line.startswith("epsstar audit: error: ")
    assert message in line
    assert listing(tmp_path) == before


def test_audit_writes_both_files_then_prints(
    inputs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "new" / "folder"
    code, stdout, err = invoke(
        [*audit_args(inputs), "--json", str(out / "a.json"), "--report", str(out / "r.html")],
        capsys,
    )
    assert code == EXIT_OK, err
    assert listing(out) == ["a.json", "r.html"]
    assert stdout.startswith("Epsilon* = ")
    assert stdout.endswith(
        f"  JSON written to {out / 'a.json'}\n  report written to {out / 'r.html'}\n"
    )


@pytest.mark.parametrize(
    "failure",
    [KeyboardInterrupt(), OSError(errno.ENOSPC, "No space left on device")],
    ids=["ctrl-c", "full disk"],
)
def test_audit_report_failure_leaves_no_json(
    failure: BaseException,
    inputs: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import epsstar.reports

    def render(result: Any, path: Path) -> None:
        Path(path).write_text("half a report")
        raise failure

    monkeypatch.setattr(epsstar.reports, "render", render)
    out = tmp_path / "out"
    code, stdout, err = invoke(
        [*audit_args(inputs), "--json", str(out / "a.json"), "--report", str(out / "r.html")],
        capsys,
    )
    assert stdout == ""
    assert not out.exists()
    if isinstance(failure, KeyboardInterrupt):
        assert (code, err) == (EXIT_INTERRUPTED, "epsstar: interrupted\n")
    else:
        assert code == EXIT_USAGE
        line = one_line_error(err)
        assert line == (
            "epsstar audit: error: --report: cannot write (No space left on device). "
            f"Found {str(out / 'r.html')!r}."
        )


def test_audit_json_on_standard_output_stays_pure(
    inputs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "r.html"
    code, stdout, err = invoke(
        [*audit_args(inputs), "--json", "-", "--report", str(report)], capsys
    )
    assert code == EXIT_OK
    assert json.loads(stdout)["method"] == "empirical"  # nothing but the JSON
    assert err == f"  report written to {report}\n"
    assert report.is_file()


def test_ctrl_c_in_a_real_process_leaves_no_file(inputs: Path, tmp_path: Path) -> None:
    """SIGINT while the report is being drawn: exit 130, no JSON, no temporary, no folder."""
    out = tmp_path / "out"
    code = (
        "import sys, time\n"
        "import epsstar.reports\n"
        "def render(result, path):\n"
        "    sys.stderr.write('drawing\\n'); sys.stderr.flush(); time.sleep(60)\n"
        "epsstar.reports.render = render\n"
        "from epsstar.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    args = [*audit_args(inputs), "--json", str(out / "a.json"), "--report", str(out / "r.html")]
    process = cli_process(code, args)
    assert process.stderr is not None
    assert process.stderr.readline() == "drawing\n"
    assert out.is_dir()  # the JSON waits, unnamed, for the report
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == EXIT_INTERRUPTED, stderr
    assert stderr == "epsstar: interrupted\n"
    assert stdout == ""
    assert not out.exists()


def test_ctrl_c_of_a_dask_audit_is_one_line(inputs: Path, tmp_path: Path) -> None:
    """SIGINT to the whole process group, as a terminal sends it, once the local cluster's
    workers run: exit 130 and the one line, without a worker's traceback; no file."""
    pytest.importorskip("distributed")
    out = tmp_path / "out"
    code = (
        "import contextlib, faulthandler, sys, time\n"
        # Where the command would hang, its threads' stacks reach the assertion message.
        "faulthandler.dump_traceback_later(55, exit=False)\n"
        "import epsstar.audit.engines.dask_engine as engine\n"
        "started = engine.dask_client\n"
        "@contextlib.contextmanager\n"
        "def waiting(chosen):\n"
        "    with started(chosen) as client:\n"
        "        client.wait_for_workers(chosen.workers)\n"
        "        sys.stderr.write('running\\n'); sys.stderr.flush(); time.sleep(60)\n"
        "        yield client\n"
        "engine.dask_client = waiting\n"
        "from epsstar.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    args = [*audit_args(inputs), "--engine", "dask", "--json", str(out / "a.json")]
    process = cli_process(code, args, new_session=True)
    assert process.stderr is not None
    try:
        assert process.stderr.readline() == "running\n"
        os.killpg(process.pid, signal.SIGINT)
        # The command's own exit is what the user waits for. A worker process that is still
        # shutting down after it (terminated by the command's exit) may hold the pipes a
        # while longer, so the group is cleared before they are read.
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=60)
    finally:
        exited = process.poll() is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    stdout, stderr = process.communicate(timeout=30)
    assert exited, f"no exit within 60 s of SIGINT; standard error:\n{stderr}"
    assert process.returncode == EXIT_INTERRUPTED, stderr
    assert stderr == "epsstar: interrupted\n"
    assert stdout == ""
    assert not out.exists()


# --- epsilon -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("folder", "must name a file, not a folder"),
        ("/dev/full", "not a device"),
        ("in/train.npy", "--json would overwrite --train-losses"),
        ("in/population.npy", "--json would overwrite --population-losses"),
        ("y" * 300, "longer than the 255 bytes"),
    ],
    ids=["folder", "device", "training losses", "population losses", "long name"],
)
def test_epsilon_refuses_bad_locations_before_reading(
    target: str,
    message: str,
    inputs: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import epsstar.statistics.estimators.estimator

    monkeypatch.setattr(
        epsstar.statistics.estimators.estimator, "estimate", must_not_run("the estimate")
    )
    (tmp_path / "folder").mkdir()
    before = listing(tmp_path)
    located = target if target.startswith("/") else str(tmp_path / target)
    code, out, err = invoke([*epsilon_args(inputs), "--json", located], capsys)
    assert code == EXIT_USAGE
    assert out == ""
    assert message in one_line_error(err)
    assert listing(tmp_path) == before
    assert np.load(inputs / "train.npy").shape == (2000,)


def test_epsilon_makes_missing_folders(inputs: Path, tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "result.json"
    assert main([*epsilon_args(inputs), "--json", str(target)]) == EXIT_OK
    assert json.loads(target.read_text())["method"] == "empirical"
    assert listing(tmp_path / "a") == ["b", "b/result.json"]


# --- seeds ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["-1", str(2**32), "1.5", "x"])
@pytest.mark.parametrize("command", ["audit", "audit-many", "epsilon", "simulate"])
def test_a_bad_seed_is_refused_when_parsed(
    command: str, value: str, inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = {
        "audit": audit_args(inputs),
        "audit-many": ["audit-many", "manifest.csv"],
        "epsilon": epsilon_args(inputs),
        "simulate": ["simulate", "--quick"],
    }[command]
    code, out, err = invoke([*args, "--seed", value], capsys)
    assert code == EXIT_USAGE
    assert out == ""
    assert one_line_error(err) == (
        f"epsstar {command}: error: argument --seed: must be an integer from 0 to "
        f"4294967295. Found {value!r}."
    )


def test_the_largest_seed_is_taken(inputs: Path) -> None:
    assert main([*epsilon_args(inputs), "--seed", str(2**32 - 1)]) == EXIT_OK


# --- standard output -----------------------------------------------------------------------------


def closed_pipe_run(args: list[str]) -> subprocess.CompletedProcess[str]:
    """The command with standard output a pipe whose reader has gone."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        return run_process(args, stdout=writer, capture_output=False, stderr=subprocess.PIPE)
    finally:
        os.close(writer)


@pytest.mark.parametrize("case", ["summary", "json", "simulate", "help"])
def test_a_closed_standard_output_is_exit_141_without_a_word(
    case: str, inputs: Path, tmp_path: Path
) -> None:
    target = tmp_path / "result.json"
    args = {
        "summary": [*epsilon_args(inputs), "--json", str(target)],
        "json": [*epsilon_args(inputs), "--json", "-"],
        "simulate": ["simulate", "--quick"],
        "help": ["audit", "--help"],
    }[case]
    done = closed_pipe_run(args)
    assert done.stderr == ""
    # argparse's help swallows the error of its own write: it ends as it would have
    assert done.returncode == (EXIT_OK if case == "help" else EXIT_BROKEN_PIPE)
    if case == "summary":  # the file was in place before the summary was printed
        assert json.loads(target.read_text())["method"] == "empirical"


def test_a_closed_standard_output_in_this_process(
    inputs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Closed:
        def write(self, text: str) -> int:
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")

        def flush(self) -> None:
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    closed = Closed()
    monkeypatch.setattr(sys, "stdout", closed)
    assert main(epsilon_args(inputs)) == EXIT_BROKEN_PIPE
    assert sys.stdout is closed


def test_a_full_standard_output_is_one_line(inputs: Path) -> None:
    with open("/dev/full", "w") as full:
        done = run_process(
            epsilon_args(inputs), stdout=full, capture_output=False, stderr=subprocess.PIPE
        )
    assert done.returncode == EXIT_USAGE
    assert (
        done.stderr
        == "epsstar: error: cannot write to standard output (No space left on device).\n"
    )


# --- landscape -----------------------------------------------------------------------------------


def record(strategy: str, eps: float, auroc: float | None = 0.8) -> dict[str, Any]:
    utility = {"n": 10, "accuracy": 0.5, "auroc": auroc}
    return {
        "entry": {"strategy": strategy, "repeat": 0, "params": {}},
        "result": {"epsilon_star": eps, "utility": {"population": utility}},
    }


def test_landscape_makes_missing_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"models": [record("a", 1.0), record("b", 0.5, 0.7)]}))
    page = tmp_path / "new" / "folder" / "landscape.html"
    code, out, _ = invoke(["landscape", str(results), "--out", str(page)], capsys)
    assert code == EXIT_OK
    assert out == f"landscape of 2 models written to {page}\n"
    assert listing(tmp_path / "new") == ["folder", "folder/landscape.html"]


def test_landscape_of_one_model_says_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"models": [record("a", 1.0)]}))
    page = tmp_path / "landscape.html"
    code, out, _ = invoke(["landscape", str(results), "--out", str(page)], capsys)
    assert code == EXIT_OK
    assert out == f"landscape of 1 model written to {page}\n"


@pytest.mark.parametrize(
    ("models", "message"),
    [
        ([{"entry": {}, "error": "broken"}], "a record needs an entry with a strategy"),
        (
            [{"entry": {"strategy": "s"}, "result": {"epsilon_star": 1.0}}],
            "model 's' #0 has no utility.population.auroc. Found keys ['epsilon_star']",
        ),
        (
            [{"entry": {"strategy": "s"}, "result": {"epsilon_star": 1.0, "utility": {}}}],
            "has no utility.population.auroc. Found keys []",
        ),
        (
            [
                record("s", 1.0)
                | {"result": {"epsilon_star": 1.0, "utility": {"population": {"auroc": "0.8"}}}}
            ],
            "utility.population.auroc of model 's' #0 must be a number in [0, 1] or null. "
            "Found '0.8'",
        ),
        ([record("s", 1.0, 7.0)], "must be a number in [0, 1] or null. Found 7.0"),
        ([record("s", 1.0, None)], "no audited model has both an Epsilon* and a population auroc"),
        ([record("s", 1.0), {"entry": {"strategy": "t"}}], "model 't' #0 has neither a result"),
    ],
)
def test_landscape_refuses_records_without_what_it_draws(
    models: list[dict[str, Any]], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"models": models}))
    page = tmp_path / "out" / "landscape.html"
    code, out, err = invoke(["landscape", str(results), "--out", str(page)], capsys)
    assert code == EXIT_USAGE
    assert out == ""
    line = one_line_error(err)
    assert message in line
    if "no audited model" not in message:
        assert f"{results}: " in line  # the file is named
    assert listing(tmp_path) == ["results.json"]


def test_landscape_never_overwrites_its_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results.json"
    text = json.dumps({"models": [record("a", 1.0)]})
    results.write_text(text)
    code, _, err = invoke(["landscape", str(results), "--out", str(results)], capsys)
    assert code == EXIT_USAGE
    assert "--out would overwrite RESULTS" in one_line_error(err)
    assert results.read_text() == text


# --- audit-many ----------------------------------------------------------------------------------


def manifest(folder: Path, rows: list[tuple[str, str, int]]) -> Path:
    """A CSV manifest in ``folder`` with relative paths to the copied data."""
    folder.mkdir(exist_ok=True)
    lines = ["model,train,population,label_column,strategy,repeat"]
    for model, strategy, repeat in rows:
        lines.append(f"{model},binary_train.csv,binary_population.csv,label,{strategy},{repeat}")
    path = folder / "manifest.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_audit_many_help_says_where_manifest_paths_start(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = invoke(["audit-many", "--help"], capsys)
    assert code == EXIT_OK
    assert "relative to its folder" in " ".join(out.split())


def test_audit_many_refuses_reports_that_would_share_a_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    twins = manifest(tmp_path, [("a.onnx", "a b", 0), ("b.onnx", "a_b", 0)])
    code, out, err = invoke(["audit-many", str(twins), "--reports", str(tmp_path / "r")], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert one_line_error(err) == (
        "epsstar audit-many: error: --reports: models 'a b' #0 and 'a_b' #0 would write the "
        "same report. Found 'a_b-0.html' twice."
    )
    assert listing(tmp_path) == ["manifest.csv"]


MANY_LOCATIONS = {
    "manifest": (["--json", "in/manifest.csv"], "--json would overwrite MANIFEST"),
    "listed data": (
        ["--json", "in/binary_train.csv"],
        "--json would overwrite the training data of 'a' #0",
    ),
    "json to stdout": (["--json", "-"], "--json must name a file"),
    "reports in a file": (["--reports", "file"], "--reports must name a folder, not a file"),
    "folder is a file": (["--json", "file/x.json"], "is a file, not a folder"),
    "json in reports": (
        ["--json", "r/a-0.html", "--reports", "r"],
        "--reports and --json name the same file",
    ),
}


@pytest.mark.parametrize(("options", "message"), MANY_LOCATIONS.values(), ids=MANY_LOCATIONS)
def test_audit_many_checks_its_outputs_before_auditing(
    options: list[str],
    message: str,
    inputs: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import epsstar.audit.many

    monkeypatch.setattr(epsstar.audit.many, "audit_many", must_not_run("audit_many"))
    table = manifest(inputs, [("binary_logreg.onnx", "a", 0), ("binary_logreg.onnx", "b", 1)])
    (tmp_path / "file").write_text("x")
    before = listing(tmp_path)
    located = [
        str(tmp_path / word) if previous.startswith("--") and word != "-" else word
        for previous, word in zip(["", *options], options, strict=False)
    ]
    code, out, err = invoke(["audit-many", str(table), "--quiet", *located], capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert message in one_line_error(err)
    assert listing(tmp_path) == before


@pytest.mark.parametrize("quiet", [True, False])
def test_audit_many_says_each_failure_once_and_counts_plainly(
    quiet: bool, inputs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = manifest(inputs, [("missing.onnx", "s", 0), ("gone.onnx", "s", 1)])
    out = tmp_path / "out"
    args = ["audit-many", str(table), "--jobs", "1", "--json", str(out / "r.json")]
    code, stdout, err = invoke(
        [*args, "--reports", str(out / "reports")] + (["--quiet"] if quiet else []), capsys
    )
    assert code == EXIT_PARTIAL
    lines = err.splitlines()
    assert len(lines) == 2  # a progress line per model, or a FAILED line each with --quiet
    for name in ("missing.onnx", "gone.onnx"):
        (line,) = [line for line in lines if name in line]
        assert line.count("no such file") == 1
        assert line.startswith("FAILED" if quiet else "[")
    assert "2 models: 0 audited, 2 failed\n" in stdout
    assert stdout.index("2 models:") > stdout.index("strategy")
    document = json.loads((out / "r.json").read_text())
    assert document["n_failed"] == 2


def test_audit_many_of_one_model_says_model(
    inputs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = manifest(inputs, [("missing.onnx", "s", 0)])
    code, stdout, _ = invoke(["audit-many", str(table), "--jobs", "1", "--quiet"], capsys)
    assert code == EXIT_PARTIAL
    assert "1 model: 0 audited, 1 failed\n" in stdout


def test_audit_many_writes_reports_and_json_as_one(
    inputs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = manifest(inputs, [("binary_logreg.onnx", "lr", 0), ("missing.onnx", "lr", 1)])
    out = tmp_path / "out"
    code, stdout, _ = invoke(
        ["audit-many", str(table), "--jobs", "1", "--quiet", "--method", "empirical",
         "--json", str(out / "r.json"), "--reports", str(out / "reports")],
        capsys,
    )  # fmt: skip
    assert code == EXIT_PARTIAL
    assert listing(out) == ["r.json", "reports", "reports/lr-0.html"]
    document = json.loads((out / "r.json").read_text())
    assert document["models"][0]["report"] == "reports/lr-0.html"
    assert "2 models: 1 audited, 1 failed" in stdout
    assert f"1 report written to {out / 'reports'}" in stdout


def test_audit_many_interrupted_leaves_nothing(
    inputs: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import epsstar.audit.many

    real = epsstar.audit.many.audit_many

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        real(*args, **kwargs)  # the reports are drawn ...
        assert list(Path(kwargs["report_dir"]).iterdir())
        raise KeyboardInterrupt  # ... and Ctrl-C comes before the JSON

    monkeypatch.setattr(epsstar.audit.many, "audit_many", interrupted)
    table = manifest(inputs, [("binary_logreg.onnx", "lr", 0)])
    out = tmp_path / "out"
    code, stdout, err = invoke(
        ["audit-many", str(table), "--jobs", "1", "--quiet", "--method", "empirical",
         "--json", str(out / "r.json"), "--reports", str(out / "reports")],
        capsys,
    )  # fmt: skip
    assert (code, stdout, err) == (EXIT_INTERRUPTED, "", "epsstar: interrupted\n")
    assert not out.exists()
