"""Messages stay one readable line whatever the input holds.

A path with a line break, a 10,007-character column name, losses near ±1e308: one line on
standard error, values cut to about 60 characters (``epsstar.cli.common.one_line``), and no
raw numpy warning (``epsstar.statistics.summaries.loss_summary.MAX_LOSS``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from epsstar.cli import main
from epsstar.cli.common.one_line import MAX_QUOTED, one_line

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "models"


def _line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "encountered" not in err  # numpy's RuntimeWarning text
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


def _audit(train: Path, label: str) -> list[str]:
    return [
        "audit",
        str(FIXTURES / "binary_logreg.onnx"),
        "--train",
        str(train),
        "--population",
        str(FIXTURES / "binary_population.csv"),
        "--label-column",
        label,
        "--quiet",
    ]


def test_a_path_with_a_line_break_stays_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = tmp_path / "tr\nain.csv"
    shutil.copyfile(FIXTURES / "binary_train.csv", train)
    assert main(_audit(train, "no such column")) == 2
    line = _line(capsys)
    assert "tr\\nain.csv: label column 'no such column' must be one of" in line


def test_a_long_column_name_is_cut(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_audit(FIXTURES / "binary_train.csv", "L" * 10_007)) == 2
    line = _line(capsys)
    assert len(line) < 400
    assert "'LLLL" in line
    assert "...' (10007 chars)" in line


def test_losses_near_the_largest_float_are_refused_without_numpy_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(0)
    np.save(tmp_path / "train.npy", np.append(rng.normal(size=300), [1e308, -1.7e308]))
    np.save(tmp_path / "population.npy", rng.normal(size=300))
    for method in ("tails-tested", "parametric"):
        code = main(
            [
                "epsilon",
                "--train-losses",
                str(tmp_path / "train.npy"),
                "--population-losses",
                str(tmp_path / "population.npy"),
                "--method",
                method,
            ]
        )
        assert code == 2
        line = _line(capsys)
        assert "must lie within ±1e+100" in line
        assert line.endswith("the first at index 300. Found 1e+308.")


@given(st.text())
def test_one_line_has_no_line_break_and_cuts_only_long_quotes(text: str) -> None:
    shown = one_line(text)
    assert len(shown.splitlines()) <= 1
    assert not any(ord(c) < 32 or 127 <= ord(c) < 160 for c in shown)
    if text.isprintable() and "'" not in text and '"' not in text:
        assert shown == text


@given(st.text(alphabet="ab c", max_size=200))
def test_quoted_values_are_cut_to_the_limit(word: str) -> None:
    shown = one_line(f"column {word!r} is bad. Found 1.")
    assert shown.endswith(" is bad. Found 1.")
    quoted = repr(word)
    if len(quoted) <= MAX_QUOTED:
        assert shown == f"column {quoted} is bad. Found 1."
    else:
        assert f"...' ({len(quoted) - 2} chars)" in shown
        assert len(shown) < len(f"column {quoted} is bad. Found 1.")


def test_storage_options_cannot_send_a_local_folder_elsewhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("distributed")
    folder = tmp_path / "parts"
    folder.mkdir()
    shutil.copyfile(FIXTURES / "binary_train.parquet", folder / "part-0.parquet")
    args = [*_audit(folder, "label"), "--engine", "dask", "--storage-options", '{"protocol": "s3"}']
    assert main(args) == 2
    line = _line(capsys)
    assert "--storage-options must not choose another file system than the data set's own" in line
    assert "s3fs" not in line
    assert line.endswith(f"Found {str(folder)!r}.")
