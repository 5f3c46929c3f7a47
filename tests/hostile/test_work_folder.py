"""A resumed ``audit-training --work`` folder that was edited, cut short or made read-only.

Everything the audit resumes is read through one reader that checks it: each case ends
with exit code 2 and one line naming the file at fault, writes no output, and leaves the
folder as it was. The finished folder is made once, by a real audit, and copied per case.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from epsstar.cli.exit_codes import EXIT_OK, EXIT_USAGE
from tests.conftest import invoke

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "fixtures" / "models"


def _command(folder: Path, work: Path) -> list[str]:
    return [
        "audit-training",
        *("--train", str(folder / "binary_train.csv")),
        *("--population", str(folder / "binary_population.csv")),
        *("--label-column", "label", "--quiet", "--epochs", "1", "--canaries", "100"),
        *("--claimed-epsilon", "1", "--work", str(work)),
        *("--json", str(folder / "out.json")),
    ]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the tables and the ``--work`` folder of a finished audit (one run)."""
    folder = tmp_path_factory.mktemp("finished")
    for name in ("binary_train.csv", "binary_population.csv"):
        shutil.copy(MODELS / name, folder / name)
    from epsstar.cli.main import main

    assert main(_command(folder, folder / "work")) == EXIT_OK
    (folder / "out.json").unlink()
    assert sorted(p.name for p in (folder / "work").iterdir()) == [
        "canaries-population.csv",
        "run-00001.json",
        "settings.json",
    ]
    return folder


@pytest.fixture
def copied(finished: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "copy"
    shutil.copytree(finished, folder)
    return folder


def _edit_run(change: Callable[[dict[str, object]], None]) -> Callable[[Path], None]:
    def edit(work: Path) -> None:
        record = work / "run-00001.json"
        document = json.loads(record.read_text())
        change(document)
        record.write_text(json.dumps(document))

    return edit


def _write(name: str, text: str) -> Callable[[Path], None]:
    return lambda work: (work / name).write_text(text, encoding="utf-8")


def _rename(new: str) -> Callable[[Path], None]:
    return lambda work: (work / "run-00001.json").rename(work / new)


def _into_folder(name: str) -> Callable[[Path], None]:
    def edit(work: Path) -> None:
        (work / name).unlink()
        (work / name).mkdir()

    return edit


DEEP = "[" * 100_000 + "]" * 100_000
LONG_INTEGER = '{"scores": {"input": [' + "9" * 5_000 + ']}, "model": {}, "seconds": 1}'

#: An edit of the work folder, and what the one line says.
EDITS: dict[str, tuple[Callable[[Path], None], str]] = {
    "a run cut short": (
        lambda work: (work / "run-00001.json").write_bytes(
            (work / "run-00001.json").read_bytes()[:100]
        ),
        "run-00001.json: must be JSON (Expecting",
    ),
    "a run nested 100,000 deep": (
        _write("run-00001.json", DEEP),
        "run-00001.json: the top level must be nested at most 64 levels deep",
    ),
    "settings nested 100,000 deep": (
        _write("settings.json", DEEP),
        "settings.json: the top level must be nested at most 64 levels deep",
    ),
    "a 5,000-digit integer": (
        _write("run-00001.json", LONG_INTEGER),
        "run-00001.json: integers must have at most",
    ),
    "a lone surrogate": (
        _write("run-00001.json", '{"scores": {"input": [1]}, "model": {"file": "\\udc80"}}'),
        "run-00001.json: strings must be Unicode text (a lone surrogate",
    ),
    "settings not UTF-8": (
        lambda work: (work / "settings.json").write_bytes(b"\xff\xfe{}"),
        "--work: settings.json must be UTF-8 JSON written by audit-training",
    ),
    "settings of another audit": (
        _write("settings.json", json.dumps({"runs": 1})),
        "--work holds the runs of another audit",
    ),
    "a run of no plan": (_rename("run-00007.json"), "run-00007.json is not the record of a run"),
    "a run numbered 0": (_rename("run-00000.json"), "run-00000.json is not the record of a run"),
    "a run misnamed": (_rename("run--0003.json"), "run--0003.json is not the record of a run"),
    "a run without its threat model": (
        _edit_run(lambda run: run.update(scores={})),
        "run-00001.json must hold scores under the threat models ['input']. Found [].",
    ),
    "a run with no scores": (
        _edit_run(lambda run: run.update(scores={"input": []})),
        "run-00001.json must hold scores under the threat models",
    ),
    "a run of another threat model": (
        _edit_run(lambda run: run.update(scores={"nonsense": [1.0]})),
        "run-00001.json: must be a finished run's record",
    ),
    "fewer scores than canaries": (
        _edit_run(lambda run: run.update(scores={"input": [0.5] * 50})),
        "must score every population canary under threat model input (100). Found 50",
    ),
    "a run that is a folder": (_into_folder("run-00001.json"), "cannot read run-00001.json"),
    "settings that are a folder": (_into_folder("settings.json"), "cannot read settings.json"),
    "a canary table that is a folder": (
        _into_folder("canaries-population.csv"),
        "canaries-population.csv': Is a directory",
    ),
}


def _listing(folder: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None
        for p in sorted(folder.rglob("*"))
    }


def _one_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(("edit", "expected"), EDITS.values(), ids=EDITS)
def test_an_edited_work_folder_is_one_line_and_left_as_it_was(
    copied: Path,
    capsys: pytest.CaptureFixture[str],
    edit: Callable[[Path], None],
    expected: str,
) -> None:
    work = copied / "work"
    edit(work)
    before = _listing(copied)
    code, out, err = invoke(_command(copied, work), capsys)
    assert code == EXIT_USAGE, err
    assert expected in _one_line(err)
    assert err.startswith("epsstar audit-training: error: ")
    assert out == ""
    assert _listing(copied) == before


def test_the_untouched_folder_resumes(copied: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The edits above are what fails: the same folder, untouched, resumes and writes."""
    code, _, err = invoke(_command(copied, copied / "work"), capsys)
    assert code == EXIT_OK, err
    assert (copied / "out.json").is_file()


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("read-only folder, a run to do", "--work: cannot write in"),
        ("read-only canary table", None),
        ("unreadable run", "--work: cannot read run-00001.json (Permission denied)"),
        ("unreadable settings", "--work: cannot read settings.json (Permission denied)"),
    ],
)
def test_a_work_folder_the_user_may_not_write_or_read(
    as_user: list[str], copied: Path, change: str, expected: str | None
) -> None:
    """Permissions bind the command as they bind a user (``as_user``): a folder or file it
    may not write or read is one line; a read-only table of its own is replaced, not
    written through."""
    work = copied / "work"
    if change == "read-only folder, a run to do":
        (work / "run-00001.json").unlink()
        work.chmod(0o555)
    elif change == "read-only canary table":
        (work / "canaries-population.csv").chmod(0o444)
    elif change == "unreadable run":
        (work / "run-00001.json").chmod(0)
    else:
        (work / "settings.json").chmod(0)
    before = sorted(p.name for p in work.iterdir())
    done = subprocess.run(
        [*as_user, sys.executable, "-m", "epsstar.cli", *_command(copied, work)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    work.chmod(0o755)
    for path in work.iterdir():
        path.chmod(0o644)
    assert sorted(p.name for p in work.iterdir()) == before
    if expected is None:
        assert done.returncode == EXIT_OK, done.stderr
        assert (copied / "out.json").is_file()
        return
    assert done.returncode == EXIT_USAGE, done.stderr
    assert expected in _one_line(done.stderr)
    assert not (copied / "out.json").exists()
