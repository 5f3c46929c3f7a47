"""``--features`` is parsed once, the same way, by every command that takes it: the same value
for the same text, the same one-line refusal for the same bad text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from epsstar.cli.exit_codes import EXIT_USAGE
from epsstar.cli.main import build_parser
from tests.conftest import invoke

MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "models"
TRAIN = str(MODELS / "binary_train.csv")
POPULATION = str(MODELS / "binary_population.csv")

#: Each command that takes ``--features``, with the other options it needs.
COMMANDS: dict[str, list[str]] = {
    "audit": [
        "audit",
        str(MODELS / "binary_logreg.onnx"),
        *("--train", TRAIN, "--population", POPULATION, "--label-column", "label"),
    ],
    "train": [
        "train",
        *("--data", TRAIN, "--label-column", "label", "--out", "{out}", "--epochs", "1"),
    ],
    "audit-training": [
        "audit-training",
        *("--train", TRAIN, "--population", POPULATION, "--label-column", "label"),
        *("--epochs", "1", "--canaries", "100", "--quiet"),
    ],
}


def _words(command: str, tmp_path: Path, *more: str) -> list[str]:
    out = str(tmp_path / "out")
    return [word.replace("{out}", out) for word in COMMANDS[command]] + list(more)


def test_every_command_that_takes_features_is_listed() -> None:
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert commands is not None
    taking = sorted(
        name
        for name, sub in commands.items()  # type: ignore[attr-defined]
        if any("--features" in action.option_strings for action in sub._actions)
    )
    assert taking == sorted(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("text", "value"),
    [("x1,x0", ("x1", "x0")), (" x2 , x3 ,", ("x2", "x3")), ("x5", ("x5",))],
)
def test_the_same_text_gives_every_command_the_same_value(
    command: str, text: str, value: tuple[str, ...], tmp_path: Path
) -> None:
    args = build_parser().parse_args(_words(command, tmp_path, "--features", text))
    assert args.features == value
    assert build_parser().parse_args(_words(command, tmp_path)).features is None


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (",", "expected comma-separated names. Found ','"),
        (" , ", "expected comma-separated names. Found ' , '"),
        ("x0,x1,x0", "expected each name once. Found 'x0' twice"),
    ],
)
def test_the_same_bad_text_gets_every_command_the_same_line(
    command: str, text: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = invoke(_words(command, tmp_path, f"--features={text}"), capsys)
    assert (code, out) == (EXIT_USAGE, "")
    assert err.splitlines() == [f"epsstar {command}: error: argument --features: {problem}"]
    assert not (tmp_path / "out").exists()


def test_the_parsed_columns_reach_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``train --features`` trains on those columns, in that order."""
    code, _, err = invoke(
        _words("train", tmp_path, "--epochs", "1", "--features", "x3, x1"), capsys
    )
    assert code == 0, err
    training = json.loads((tmp_path / "out" / "training.json").read_text(encoding="utf-8"))
    assert training["data"]["feature_names"] == ["x3", "x1"]
