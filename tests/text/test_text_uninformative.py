"""An uninformative text attack (``lowercase`` on text already in lower case) is reported as
such beside the others' results, and an audit of nothing but uninformative attacks is
refused in one line (docs/attacks.md#uninformative-attacks)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tiny_lm import TinyCorpus, write_jsonl

from epsstar.cli import main

REASON = "every record scores the same (the text is already lowercase?)"


def _lowercase_audit(corpus: TinyCorpus, folder: Path, *args: str) -> list[str]:
    """The audit of the tiny model on its records in lower case."""
    train = write_jsonl(folder / "train.jsonl", [t.lower() for t in corpus.train_texts])
    population = write_jsonl(folder / "pop.jsonl", [t.lower() for t in corpus.population_texts])
    return [
        "audit",
        str(corpus.model),
        "--train",
        str(train),
        "--population",
        str(population),
        "--text-column",
        "text",
        "--quiet",
        *args,
    ]


def test_lowercase_on_lowercase_text_is_uninformative_beside_the_loss_attack(
    corpus: TinyCorpus,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    validate_json: Any,
) -> None:
    out, report = tmp_path / "out.json", tmp_path / "out.html"
    argv = _lowercase_audit(corpus, tmp_path, "--attack", "loss", "lowercase")
    assert main([*argv, "--json", str(out), "--report", str(report)]) == 0
    printed = capsys.readouterr().out
    assert f"  attack lowercase: uninformative — {REASON}\n" in printed
    assert "  attack loss: Epsilon* " in printed
    assert "  strongest attack: loss " in printed
    document = json.loads(out.read_text())
    validate_json("audit", document)
    loss, lowercase = document["attacks"]
    assert loss["attack"] == "loss"
    assert "uninformative" not in loss
    assert "reason" not in loss
    assert loss["auc"] > 0.5  # the loss attack's result is kept, and it sees the leak
    assert lowercase["uninformative"] is True
    assert lowercase["reason"] == REASON
    assert lowercase["epsilon_star"] == lowercase["epsilon_lower_bound"] == 0.0
    assert lowercase["auc"] == 0.5
    assert lowercase["gate"] is None
    assert document["strongest_attack"] == "loss"
    assert document["epsilon_star"] == loss["epsilon_star"]
    assert document["text"]["most_exposed"][0]["attack"] == "loss"
    html = report.read_text(encoding="utf-8")
    assert f'<td class="uninformative" colspan="5">uninformative — {REASON};' in html
    assert "<td>loss (strongest)</td>" in html
    assert "An uninformative attack (every record scores the same) is never the strongest" in html


def test_only_uninformative_attacks_are_refused_in_one_line(
    corpus: TinyCorpus, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.json"
    argv = _lowercase_audit(corpus, tmp_path, "--attack", "lowercase", "--json", str(out))
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "epsstar audit: error: every attack asked for is uninformative, so the audit measured "
        "nothing and gives no Epsilon* (add --attack loss, or an attack whose scores differ "
        f"between records). Found lowercase: {REASON}."
    )
    assert not out.exists()
