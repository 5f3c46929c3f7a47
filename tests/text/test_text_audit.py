"""``epsstar audit MODEL_DIR --text-column``: a tiny GPT-2 fine-tuned here, audited end to
end through the command line (docs/text.md)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tiny_lm import TinyCorpus, copy_model, sentences, write_jsonl

from epsstar.cli import main

ATTACKS = ["loss", "zlib", "mink", "minkpp"]


def _audit(corpus: TinyCorpus, model: Path, *args: str) -> list[str]:
    return [
        "audit",
        str(model),
        "--train",
        str(corpus.train),
        "--population",
        str(corpus.population),
        "--text-column",
        "text",
        "--quiet",
        *args,
    ]


def test_a_fine_tuned_model_leaks_and_fails_the_gate(
    corpus: TinyCorpus,
    tmp_path: Path,
    validate_json: Callable[[str, Any], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "out.json"
    report = tmp_path / "report.html"
    argv = _audit(corpus, corpus.model, "--attack", *ATTACKS, "--json", str(out))
    assert main([*argv, "--max-epsilon", "0.5", "--report", str(report)]) == 1
    document = json.loads(out.read_text())
    validate_json("audit", document)
    by_name = {attack["attack"]: attack for attack in document["attacks"]}
    assert list(by_name) == ATTACKS
    for attack in by_name.values():
        assert attack["epsilon_star"] >= 0
        assert attack["epsilon_lower_bound"] >= 0
        assert attack["gate"] is not None
    # 12 epochs over 120 records: the members' mean token loss is clearly lower (the
    # untrained model below stays near 0; a broken scoring of either side would not).
    assert by_name["loss"]["epsilon_star"] > 1.0
    assert by_name["loss"]["auc"] > 0.65
    text = document["text"]
    assert text["model"]["architecture"] == "GPT2LMHeadModel"
    assert text["windows"]["train"]["records"] == 0
    assert text["blind_baseline"]["premise_holds"] is True  # one generator on both sides
    assert text["most_exposed"][0]["excerpt"] in corpus.train_texts
    assert document["passed"] is False
    (premise,) = [line for line in capsys.readouterr().out.splitlines() if "premise" in line]
    # the verdict with the rule that decided it, in the same line and the report's paragraph
    assert premise.strip().startswith("premise holds: ")
    assert "held-out lower bound 0.0000 at " in premise
    paragraph = report.read_text(encoding="utf-8").split('id="premise"', 1)[1].split("</p>")[0]
    assert "No evidence that the two sides differ without the model: " in paragraph
    assert "held-out lower bound 0.0000 at " in paragraph


def test_an_untrained_model_shows_no_leak(
    corpus: TinyCorpus, untrained: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.json"
    argv = _audit(corpus, untrained, "--json", str(out), "--max-epsilon", "1")
    extraction = ["--extraction-prefix", "8", "--extraction-suffix", "8"]
    assert main([*argv, *extraction, "--max-extraction-rate", "0"]) == 0
    document = json.loads(out.read_text())
    # Random weights cannot tell members from non-members of one source: the estimate stays
    # small and the 95 % lower bound is 0 (this fails if the sides were scored differently).
    assert document["epsilon_star"] <= 0.5
    assert document["epsilon_lower_bound"] == 0
    # nor does it repeat either side's records: every rate 0 on both, the gate passes at 0
    repeated = document["text"]["extraction"]
    for rate in repeated["rates"]:
        assert rate["train"]["count"] == rate["population"]["count"] == 0, rate
    assert repeated["records"]["train"]["tested"] > 100
    assert repeated["passed"] is True
    said = capsys.readouterr().out
    assert "extraction gate PASSED: excess 0.000 within the limit 0 " in said


def test_the_progress_bar_counts_of_the_records(
    corpus: TinyCorpus, untrained: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a terminal the bar of each side counts of its records (the scan counted them)."""
    import io
    import re

    from rich.console import Console

    from epsstar.cli.common import progress

    shown = io.StringIO()
    terminal = Console(file=shown, force_terminal=True, color_system=None, width=140)
    display = progress.progress_display
    monkeypatch.setattr(progress, "progress_display", lambda console=None: display(terminal))
    argv = [word for word in _audit(corpus, untrained, "--max-epsilon", "1") if word != "--quiet"]
    assert main(argv) == 0
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.getvalue())
    final = [" ".join(line.split()) for line in plain.splitlines()][-2:]
    assert re.fullmatch(rf"train ━+ {len(corpus.train_texts)}/120 rows [0-9:]+ 0:00:00", final[0])
    assert re.fullmatch(
        rf"population ━+ {len(corpus.population_texts)}/120 rows [0-9:]+ 0:00:00", final[1]
    )


def test_no_record_text_keeps_the_records_out(corpus: TinyCorpus, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    argv = _audit(corpus, corpus.model, "--json", str(out), "--no-record-text")
    extraction = ["--extraction-prefix", "8", "--extraction-suffix", "8"]
    assert main([*argv, *extraction, "--extraction-records", "20"]) == 0
    document = json.loads(out.read_text())
    assert document["text"]["record_text"] is False
    assert all(record["excerpt"] is None for record in document["text"]["most_exposed"])
    extracted = document["text"]["extraction"]["most_extracted"]
    assert extracted
    assert all(record["excerpt"] is None for record in extracted)
    raw = out.read_text()
    assert not any(text in raw for text in corpus.train_texts[:20])


def test_records_longer_than_the_context_are_scored_in_windows(
    corpus: TinyCorpus, tmp_path: Path
) -> None:
    long = " ".join(sentences(30, seed=7))  # far more than 64 tokens
    population = write_jsonl(tmp_path / "pop.jsonl", [*corpus.population_texts[:-1], long])
    out = tmp_path / "out.json"
    argv = _audit(corpus, corpus.model, "--json", str(out))
    argv[argv.index(str(corpus.population))] = str(population)
    assert main(argv) == 0
    windows = json.loads(out.read_text())["text"]["windows"]
    assert windows["population"] == {
        "context": 64,
        "stride": 32,
        "records": 1,
        "first_rows": [len(corpus.population_texts) - 1],
    }


def test_txt_files_hold_one_record_per_line(corpus: TinyCorpus, tmp_path: Path) -> None:
    train, population = tmp_path / "train.txt", tmp_path / "pop.txt"
    train.write_text("\n".join(corpus.train_texts) + "\n", encoding="utf-8")
    population.write_text("\n".join(corpus.population_texts) + "\n", encoding="utf-8")
    out = tmp_path / "out.json"
    argv = ["audit", str(corpus.model), "--train", str(train), "--population", str(population)]
    assert main([*argv, "--quiet", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["text"]["text_column"] is None


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err
    return err


def test_a_pickle_only_folder_is_refused_without_trust(
    corpus: TinyCorpus, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch
    from safetensors.torch import load_file

    folder = copy_model(corpus, tmp_path / "pickled", without=("model.safetensors",))
    torch.save(load_file(corpus.model / "model.safetensors"), folder / "pytorch_model.bin")
    err = _refused(_audit(corpus, folder), capsys)
    assert "pickle" in err
    assert "--trust-model" in err
    assert err.endswith("pytorch_model.bin.")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        ("no_tokenizer", "must hold its tokenizer"),
        ("not_causal", "must be a causal language model"),
        ("remote_code", "never runs"),
        ("no_weights", "must hold its weights"),
    ],
)
def test_a_bad_model_folder_gets_one_clear_line(
    corpus: TinyCorpus,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    damage: str,
    expected: str,
) -> None:
    folder = tmp_path / "model"
    if damage == "no_tokenizer":
        copy_model(corpus, folder, without=("tokenizer*", "vocab.json", "merges.txt"))
    elif damage == "no_weights":
        copy_model(corpus, folder, without=("*.safetensors",))
    else:
        copy_model(corpus, folder)
        config = json.loads((folder / "config.json").read_text())
        if damage == "not_causal":
            config["architectures"] = ["GPT2ForSequenceClassification"]
        else:
            config["auto_map"] = {"AutoModelForCausalLM": "modeling_evil.EvilModel"}
        (folder / "config.json").write_text(json.dumps(config))
    err = _refused(_audit(corpus, folder), capsys)
    assert expected in err
    assert len(err.splitlines()) == 1


def test_bad_text_records_get_one_clear_line(
    corpus: TinyCorpus, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    numbers = tmp_path / "numbers.jsonl"
    numbers.write_text("".join(json.dumps({"text": i}) + "\n" for i in range(120)))
    argv = _audit(corpus, corpus.model)
    argv[argv.index(str(corpus.population))] = str(numbers)
    err = _refused(argv, capsys)
    assert "must hold text. Found a number, 0, at row 0." in err

    empty = write_jsonl(
        tmp_path / "empty.jsonl", ["", *corpus.population_texts[1:50], "   ", "x y z"]
    )
    argv[argv.index(str(numbers))] = str(empty)
    err = _refused(argv, capsys)
    assert "Found 2 empty or blank record(s) of 52: row 0, row 50." in err

    argv[argv.index(str(empty))] = str(corpus.population)
    argv[argv.index("text")] = "body"
    err = _refused(argv, capsys)
    assert "every line must be a JSON object with the key 'body'" in err


def test_table_options_and_text_options_do_not_mix(
    corpus: TinyCorpus, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _refused([*_audit(corpus, corpus.model), "--label-column", "y"], capsys)
    assert "reads no labels" in err
    argv = ["audit", str(corpus.model), "--train", str(corpus.train)]
    err = _refused([*argv, "--population", str(corpus.population)], capsys)
    assert "--label-column is required (or --text-column" in err
    err = _refused([*_audit(corpus, corpus.model), "--attack", "lira"], capsys)
    assert "reads a classifier's labels" in err or "reference model" in err


def test_the_output_never_replaces_an_input(corpus: TinyCorpus, tmp_path: Path) -> None:
    copy = tmp_path / "train.jsonl"
    shutil.copy(corpus.train, copy)
    argv = _audit(corpus, corpus.model, "--json", str(copy))
    argv[argv.index(str(corpus.train))] = str(copy)
    assert main(argv) == 2
    assert copy.read_bytes() == corpus.train.read_bytes()


def test_a_population_from_another_source_fails_the_premise(
    corpus: TinyCorpus, tmp_path: Path
) -> None:
    # Records the model never saw and that any reader tells apart: numbered support tickets.
    other = [f"Ticket {i}: {text.upper()}" for i, text in enumerate(sentences(120, seed=99))]
    population = write_jsonl(tmp_path / "other.jsonl", other)
    out = tmp_path / "out.json"
    argv = _audit(corpus, corpus.model, "--json", str(out))
    argv[argv.index(str(corpus.population))] = str(population)
    assert main(argv) == 0
    document = json.loads(out.read_text())
    assert document["text"]["premise_holds"] is False
    assert document["text"]["blind_baseline"]["epsilon_lower_bound"] > 0
    assert any("the premise fails" in line for line in document["warnings"])
