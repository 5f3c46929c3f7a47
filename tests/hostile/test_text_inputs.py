"""Hostile text audits: JSON Lines records that break ``json.loads`` and a tokenizer that
hands out ids its model has no embedding for.

Each case ends with exit code 2, one line naming the file (and the line or row) and the
value, and no output file. The tiny GPT-2-like model is built here (``tests/text/tiny_lm``:
nothing is downloaded), untrained: these cases are refused before any score matters.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from epsstar.cli.exit_codes import EXIT_OK, EXIT_USAGE
from tests.conftest import invoke

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from tests.text.tiny_lm import sentences, tiny_model, tokenizer_for, write_jsonl


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model and its tokenizer (``model``), the same with a tokenizer that adds an id
    beyond the embedding (``wide``), and records for both sides."""
    import torch

    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("text")
    texts = sentences(240, 0)
    tokenizer = tokenizer_for(texts)
    model = tiny_model(len(tokenizer))
    for name in ("model", "wide"):
        model.save_pretrained(folder / name)
        tokenizer.save_pretrained(folder / name)
    # The beginning-of-sequence token the tokenizer adds to every record, renumbered: the
    # tokenizer's size (and so the loader's check of it) is unchanged.
    path = folder / "wide" / "tokenizer.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    document["post_processor"]["special_tokens"]["<|endoftext|>"]["ids"] = [5000]
    path.write_text(json.dumps(document), encoding="utf-8")
    write_jsonl(folder / "train.jsonl", texts[:120])
    write_jsonl(folder / "pop.jsonl", texts[120:])
    return folder


def _audit(folder: Path, model: str, train: Path) -> list[str]:
    return [
        "audit", str(folder / model), "--train", str(train),
        "--population", str(folder / "pop.jsonl"), "--text-column", "text", "--quiet",
        "--json", str(train.parent / "out.json"),
    ]  # fmt: skip


def _one_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


#: A third record, as the JSON Lines file holds it, and what the one line says of it.
RECORDS = {
    "nested 100,000 deep": (
        '{"text": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "the top level must be nested at most 64 levels deep. Found more than 64 levels.",
    ),
    "a 5,000-digit integer": (
        '{"text": "a b c", "id": ' + "7" * 5_000 + "}",
        "integers must have at most 4,300 digits",
    ),
    "a lone surrogate": (
        '{"text": "a lone \\ud800 surrogate"}',
        "strings must be Unicode text (a lone surrogate cannot be written as UTF-8). "
        "Found 'a lone \\ud800 surrogate'.",
    ),
    "a lone surrogate in a key": (
        '{"text": "fine", "\\udfff": 1}',
        "strings must be Unicode text (a lone surrogate cannot be written as UTF-8). "
        "Found '\\udfff'.",
    ),
    "not JSON": ('{"text": "cut', "must be JSON (Invalid control character"),
}


@pytest.mark.parametrize(("line", "said"), RECORDS.values(), ids=RECORDS)
def test_a_json_lines_record_that_breaks_the_parser_is_one_line(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, said: str
) -> None:
    train = tmp_path / "train.jsonl"
    lines = (folder / "train.jsonl").read_text(encoding="utf-8").splitlines()
    train.write_text("\n".join([*lines[:2], line, *lines[2:]]) + "\n", encoding="utf-8")
    code, out, err = invoke(_audit(folder, "model", train), capsys)
    assert code == EXIT_USAGE, err
    assert _one_line(err).startswith(f"epsstar audit: error: {train}, line 3: {said}")
    assert out == ""
    assert not (tmp_path / "out.json").exists()


def test_token_ids_beyond_the_embedding_are_refused_before_the_model_runs(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = tmp_path / "train.jsonl"
    train.write_bytes((folder / "train.jsonl").read_bytes())
    code, out, err = invoke(_audit(folder, "wide", train), capsys)
    assert code == EXIT_USAGE, err
    vocabulary = len(json.loads((folder / "wide" / "tokenizer.json").read_text())["model"]["vocab"])
    assert _one_line(err) == (
        f"epsstar audit: error: {train}, row 0: the model's tokenizer must give token ids its "
        f"embedding holds (0 to {vocabulary - 1}). Found the id 5,000."
    )
    assert out == ""
    assert not (tmp_path / "out.json").exists()
    # the same records and model with the tokenizer as saved are audited
    code, _, err = invoke(_audit(folder, "model", train), capsys)
    assert code == EXIT_OK, err
    assert (tmp_path / "out.json").is_file()
