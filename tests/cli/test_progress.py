"""The command line's progress: rich bars on a terminal, plain lines elsewhere, read from rich
consoles that write into a string (a terminal forced on or off, a clock the test moves)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from epsstar.audit.many import ManifestEntry, ModelAudit
from epsstar.cli.commands.demo import _Display
from epsstar.cli.common.progress import RichAuditProgress, audit_progress
from epsstar.training.progress import EpochProgress, progress_display
from epsstar.training.results import EpochStats
from epsstar.training.trainer import TrainingConfig


class Clock:
    """The time rich reads, moved by the test."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _console(shown: io.StringIO, *, terminal: bool, clock: Clock | None = None) -> Console:
    return Console(
        file=shown,
        force_terminal=terminal,
        color_system=None,
        width=140,
        get_time=clock,
    )


def _screen_lines(text: str) -> list[str]:
    """Every line the terminal was sent, control sequences dropped, a bar as one ``━`` and
    spaces joined."""
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    lines = [re.sub(r"[━╸╺][━╸╺ ]*[━╸╺]|[━╸╺]", "━", line) for line in re.split(r"[\r\n]", plain)]
    return [" ".join(line.split()) for line in lines if line.strip()]


def test_a_table_bar_counts_of_the_known_rows_or_with_the_file_size(tmp_path: Path) -> None:
    """Of the rows to come when the audit knows them (Parquet, NPZ and NPY metadata, text
    records), else a count beside the file's size (a CSV file), never a "?"."""
    csv = tmp_path / "train.csv"
    csv.write_text("x,label\n" + "1,0\n" * 2_500)
    shown = io.StringIO()
    with progress_display(_console(shown, terminal=True)) as display:
        table = RichAuditProgress(display)
        table.start("train", csv, None)
        table.advance(250)
        table.start("population", tmp_path / "population.parquet", 300)
        table.advance(100)
    lines = _screen_lines(shown.getvalue())
    assert not any("?" in line for line in lines)
    size = csv.stat().st_size / 1000
    assert any(
        re.fullmatch(rf"train ━+ 250 rows of a {size:.1f} kB file 0:00:00", line) for line in lines
    ), lines
    assert any(
        re.fullmatch(r"population ━+ 100/300 rows 0:00:00 -:--:--", line) for line in lines
    ), lines


def test_no_bar_is_drawn_where_there_is_no_terminal(tmp_path: Path) -> None:
    shown = io.StringIO()
    with progress_display(_console(shown, terminal=False)) as display:
        table = RichAuditProgress(display)
        table.start("train", tmp_path / "train.parquet", 10)
        table.advance(10)
    assert shown.getvalue() == ""
    with audit_progress(enabled=False) as nothing:
        assert nothing is None


CONFIGS = {
    "nonprivate-e2": TrainingConfig(epochs=2),
    "dp-eps3-e1": TrainingConfig(epochs=1, target_epsilon=3.0),
}


def _epoch(label: str, epoch: int, clock: Clock, display: _Display) -> None:
    clock.now += 1.0
    epochs = CONFIGS[label].epochs
    epsilon = 1.5 if CONFIGS[label].private else None
    display.epoch(label, 0, EpochStats(epoch, epochs, 0.5, epsilon, 1.0))


def _audited(label: str) -> ModelAudit:
    entry = ManifestEntry(Path("m.onnx"), Path("t.csv"), Path("p.csv"), "label", label, 0, {})
    return ModelAudit(entry, error="refused")


def _demo_run(display: _Display, clock: Clock) -> None:
    """Two models: two epochs without privacy, one of DP-SGD (counted twice), one second each."""
    with display:
        display.step("training 2 models")
        _epoch("nonprivate-e2", 1, clock, display)
        _epoch("nonprivate-e2", 2, clock, display)
        display.plan("dp-eps3-e1")
        _epoch("dp-eps3-e1", 1, clock, display)
        display.audits_start(2)
        for label in CONFIGS:
            display.audited(_audited(label))


def test_the_demo_prints_plain_lines_with_the_time_left_where_there_is_no_terminal() -> None:
    shown, clock = io.StringIO(), Clock()
    _demo_run(
        _Display(CONFIGS, 1, quiet=False, console=_console(shown, terminal=False, clock=clock)),
        clock,
    )
    assert shown.getvalue().splitlines() == [
        "training 2 models ...",
        # 2 of 4 units (an epoch of DP-SGD counts twice) in 2 s: 2 s left
        "trained nonprivate-e2 #0 (1/2 models, 0:00:02 left)",
        "dp-eps3-e1: choosing the noise multiplier for ε = 3 ...",
        "trained dp-eps3-e1 #0 (2/2 models)",
        "[1/2] nonprivate-e2 #0: error: refused",
        "[2/2] dp-eps3-e1 #0: error: refused",
    ]


def test_the_demo_draws_bars_with_the_time_left_on_a_terminal() -> None:
    shown, clock = io.StringIO(), Clock()
    display = _Display(CONFIGS, 1, quiet=False, console=_console(shown, terminal=True, clock=clock))
    with display:
        _epoch("nonprivate-e2", 1, clock, display)
        display.display.refresh()
        assert any(
            re.fullmatch(r"nonprivate-e2 #0 ━+ 1/2 epochs loss 0\.5000 0:00:00 -:--:--", line)
            for line in _screen_lines(shown.getvalue())
        )
        _epoch("nonprivate-e2", 2, clock, display)
        display.display.refresh()
        # the bar over all models: 2 of 4 units (an epoch of DP-SGD counts twice) in 2 s
        assert any(
            re.fullmatch(r"training ━+ *1/2 models 0:00:02 0:00:02", line)
            for line in _screen_lines(shown.getvalue())
        )
        display.plan("dp-eps3-e1")
        _epoch("dp-eps3-e1", 1, clock, display)
        display.audits_start(2)
        display.audited(_audited("nonprivate-e2"))
    screen = _screen_lines(shown.getvalue())
    assert "[1/2] nonprivate-e2 #0: error: refused" in screen
    assert any(re.fullmatch(r"training ━+ 2/2 models 0:00:03 0:00:00", s) for s in screen)
    assert any(re.fullmatch(r"auditing ━+ 1/2 models 0:00:00 -:--:--", s) for s in screen)
    assert not any("trained " in line for line in screen)  # the bars say it


def test_quiet_shows_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    shown, clock = io.StringIO(), Clock()
    _demo_run(
        _Display(CONFIGS, 1, quiet=True, console=_console(shown, terminal=True, clock=clock)), clock
    )
    assert shown.getvalue() == ""


def test_the_trainers_bar_is_the_same_display(capsys: pytest.CaptureFixture[str]) -> None:
    """``epsstar train``'s bar over epochs: the count of epochs, the loss and ε spent, the
    time elapsed and left; a line per epoch where there is no terminal."""
    with EpochProgress("model", 3, enabled=True) as bar:
        bar.update(EpochStats(1, 3, 0.5, 1.25, 1.0))
    screen = _screen_lines(capsys.readouterr().err)
    assert any(
        re.fullmatch(r"model ━+ 1/3 epochs loss 0\.5000 ε 1\.250 0:00:0\d [-0-9:]+", line)
        for line in screen
    ), screen
    with EpochProgress("model", 3) as bar:  # pytest's standard error is not a terminal
        bar.update(EpochStats(1, 3, 0.5, None, 1.0))
    assert capsys.readouterr().err == "model: epoch 1/3  loss 0.5000  ε -  1.0 s\n"
