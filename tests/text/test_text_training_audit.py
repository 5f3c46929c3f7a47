"""``epsstar audit-training --text-column``: text canaries in the fine-tuning of a language
model, end to end through the command line. A plain fine-tuning of the tiny GPT-2 that
memorises its records is refuted at ε = 1 by each canary design (JSON and report written);
a canary that ``--max-length`` would cut is refused by number before any run; bad input is one
line on standard error, exit code 2, no file written."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tiny_lm import sentences, tiny_model, tokenizer_for, write_jsonl

from epsstar.cli import main
from epsstar.cli.exit_codes import EXIT_GATE_FAILED, EXIT_OK, EXIT_USAGE
from epsstar.statistics.auditing.exposure import canary_exposures

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

#: Fine-tunings as functions: ``fit`` memorises (many passes over few records), ``fit_twice``
#: saves two model folders into ``{out}``, ``fit_marked`` leaves a mark that it ran.
MODULE = f"""
import shutil
import sys
from pathlib import Path

sys.path.insert(0, {str(BENCHMARKS)!r})
from text_finetune import fine_tune


def fit(train_path, out_dir, seed, init):
    fine_tune(Path(init), Path(train_path), Path(out_dir), seed=seed, epochs=40, lr=1e-2,
              batch_size=8)


def fit_twice(train_path, out_dir, seed, init):
    for name in ("a", "b"):
        shutil.copytree(init, Path(out_dir) / name)


def fit_into_init(train_path, out_dir, seed, init):
    (Path(init) / "left.txt").write_text("a run's leftovers")
    shutil.copytree(init, Path(out_dir) / "model")


def fit_adapter(train_path, out_dir, seed, init):
    import json
    import peft
    import torch
    from transformers import AutoModelForCausalLM

    config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"], fan_in_fan_out=True)
    model = peft.get_peft_model(AutoModelForCausalLM.from_pretrained(init), config)
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if "lora_" in name:  # PEFT starts B at 0: a no-op adapter would prove nothing
                weight.copy_(torch.randn(weight.shape) * 0.2)
    folder = Path(out_dir) / "adapter"
    model.save_pretrained(folder)
    written = folder / "adapter_config.json"
    settings = json.loads(written.read_text())
    settings["base_model_name_or_path"] = "elsewhere"  # the base is --init's folder
    written.write_text(json.dumps(settings))


def fit_checks_csv(train_path, out_dir, seed, init):
    import pandas as pd

    table = pd.read_csv(train_path, dtype=str, keep_default_na=False)
    if list(table.columns) != ["text", "source"] or "NA" not in set(table["text"]):
        raise ValueError("not the training table as written")
    given = pd.read_csv("train.csv", dtype=str, keep_default_na=False)["text"]
    if set(table.loc[table["text"].isin(given), "source"]) != {{"forum"}}:
        raise ValueError("a training record lost its source")
    if set(table.loc[~table["text"].isin(given), "source"]) - {{""}}:
        raise ValueError("a canary has a source")
    shutil.copytree(init, Path(out_dir) / "model")


def fit_marked(train_path, out_dir, seed, init):
    (Path(__file__).parent / "ran.mark").write_text("ran")
    shutil.copytree(init, Path(out_dir) / "model")
"""


#: A command that saves the model it starts from, unchanged, after checking its training
#: table: JSON Lines objects with the text column.
SCRIPT = """
import json
import shutil
import sys
from pathlib import Path

init, train, out = sys.argv[1:4]
rows = [json.loads(line) for line in Path(train).read_text().splitlines()]
if not rows or any(set(row) != {"text"} for row in rows):
    sys.exit("not the run's JSON Lines table")
shutil.copytree(init, Path(out) / "model")
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny GPT-2 of random weights and its tokenizer (the start of every run), 60
    training records and 200 population records of the generator of :mod:`tiny_lm`."""
    import torch

    torch.set_num_threads(1)
    where = tmp_path_factory.mktemp("text-training-audit")
    train, population = sentences(60, 0), sentences(200, 1000)
    tokenizer = tokenizer_for(sentences(200, 2000) + train + population)
    tiny_model(len(tokenizer), seed=0).save_pretrained(where / "base")
    tokenizer.save_pretrained(where / "base")
    write_jsonl(where / "train.jsonl", train)
    write_jsonl(where / "pop.jsonl", population)
    (where / "textfit.py").write_text(MODULE, encoding="utf-8")
    (where / "copy_init.py").write_text(SCRIPT, encoding="utf-8")
    return where


@pytest.fixture
def audit(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., tuple[int, dict[str, Any] | None]]:
    """``audit(out, *options)``: the command line in ``folder`` (the functions' import path),
    its exit code and JSON document (``None``: none written)."""
    monkeypatch.chdir(folder)

    def run(out: Path, *options: str) -> tuple[int, dict[str, Any] | None]:
        try:
            code = main(
            [
                "audit-training",
                "--train", "train.jsonl", "--population", "pop.jsonl",
                "--text-column", "text", "--init", "base",
                "--claimed-epsilon", "1", "--delta", "1e-5",
                "--canaries", "100", "--train-records", "0",
                "--json", str(out), "--quiet",
                *options,
            ]
            )  # fmt: skip
        except SystemExit as stop:  # argparse's refusals
            code = int(stop.code or 0)
        document = json.loads(out.read_text(encoding="utf-8")) if out.exists() else None
        return code, document

    return run


@pytest.mark.parametrize(
    ("design", "reference"),
    [("rare", []), ("random", ["--reference-model", "base"]), ("population", [])],
)
def test_a_memorising_fine_tune_is_refuted_by_each_design(
    audit: Callable[..., tuple[int, dict[str, Any] | None]],
    tmp_path: Path,
    validate_json: Callable[[str, Any], None],
    design: str,
    reference: list[str],
) -> None:
    report = tmp_path / "audit.html"
    code, document = audit(
        tmp_path / "audit.json",
        "--function", "textfit:fit", "--canary-design", design, "--report", str(report),
        *reference,
    )  # fmt: skip
    assert code == EXIT_GATE_FAILED
    assert document is not None
    validate_json("audit-training", document)
    [text] = document["threat_models"]
    assert text["threat_model"]["name"] == "text"
    assert text["epsilon_lower_bound"] > 1.0
    canaries = document["text_canaries"]
    assert canaries["design"] == design
    assert canaries["max_length"] == 64  # the tokenizer's model_max_length
    assert canaries["tokenizer_folder"] == "base"
    assert canaries["reference_model"] == ("base" if reference else None)
    scores, included = np.array(text["scores"]), np.array(text["included"], dtype=bool)
    assert scores[included].mean() < scores[~included].mean()  # members' secrets: lower loss
    if design == "population":
        assert canaries["exposure"] is None
        assert canaries["secret_tokens"] is None
    else:
        exposure = canaries["exposure"]
        expected = canary_exposures(scores, included, "members_lower")
        assert exposure["mean"] == pytest.approx(expected.mean())
        assert exposure["largest"] == pytest.approx(expected.max())
        assert exposure["possible"] == pytest.approx(np.log2((~included).sum() + 1))
    page = report.read_text(encoding="utf-8")
    assert f"text canaries of the <strong>{design}</strong> design" in page
    assert document["procedure"]["init"]["folder"] == "base"


def test_a_canary_the_max_length_would_cut_is_refused_by_number_before_any_run(
    audit: Callable[..., tuple[int, dict[str, Any] | None]],
    folder: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, document = audit(
        tmp_path / "audit.json",
        "--function", "textfit:fit_marked", "--canary-design", "population",
        "--max-length", "16",
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert document is None
    assert err.count("\n") == 1
    assert "of 100 would be cut by the fine-tuning's limit of 16 tokens" in err
    assert "canaries 1, " in err or "canary " in err
    assert not (folder / "ran.mark").exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--canary-design", "nope"], "argument --canary-design: invalid choice: 'nope'"),
        (
            ["--text-column", "body"],
            "train.jsonl: every line must be a JSON object with the key 'body' (--text-column)",
        ),
        (["--max-length", "0"], "--max-length must be an integer ≥ 1. Found 0."),
        (
            ["--function", "textfit:fit_twice"],
            "--command (run 1) saved 2 model folders into {out}; it must save one. Found 'a', 'b'.",
        ),
        (["--label-column", "label"], "--text-column audits text records, which have no label"),
        (["--threat-model", "input"], "the threat model is text. Found 'input'."),
        (["--features", "a,b"], "--text-column audits the text column alone"),
        (
            ["--function", "textfit:fit_into_init", "--init", "start"],
            "--init: run 1 changed the model folder every run starts from",
        ),
    ],
)
def test_bad_text_audits_are_refused_in_one_line(
    audit: Callable[..., tuple[int, dict[str, Any] | None]],
    folder: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    options: list[str],
    message: str,
) -> None:
    if "start" in options:  # a copy of the start, which the run changes
        shutil.copytree(folder / "base", folder / "start", dirs_exist_ok=True)
    function = [] if "--function" in options else ["--function", "textfit:fit_marked"]
    code, document = audit(tmp_path / "audit.json", *function, *options)
    err = capsys.readouterr().err
    assert code == EXIT_USAGE
    assert document is None
    assert err.count("\n") == 1
    assert message in err


def test_a_lora_adapter_saved_by_a_run_is_applied_to_the_init_folder(
    audit: Callable[..., tuple[int, dict[str, Any] | None]],
    tmp_path: Path,
    validate_json: Callable[[str, Any], None],
) -> None:
    pytest.importorskip("peft")
    code, document = audit(tmp_path / "audit.json", "--function", "textfit:fit_adapter")
    assert code in (0, 1)
    assert document is not None
    validate_json("audit-training", document)
    [run] = document["training_runs"]
    assert run["model"]["file"] == "adapter"
    assert run["model"]["loader"] == "huggingface"
    [text] = document["threat_models"]
    assert np.isfinite(text["scores"]).all()


def test_a_csv_table_of_text_reaches_the_run_as_written(
    audit: Callable[..., tuple[int, dict[str, Any] | None]], folder: Path, tmp_path: Path
) -> None:
    import pandas as pd

    train = pd.DataFrame({"text": [*sentences(40, 7), "NA"], "source": "forum"})
    train.to_csv(folder / "train.csv", index=False)
    pd.DataFrame({"text": sentences(200, 8), "source": "web"}).to_csv(
        folder / "pop.csv", index=False
    )
    code, document = audit(
        tmp_path / "audit.json",
        "--function", "textfit:fit_checks_csv", "--train", "train.csv",
        "--population", "pop.csv", "--train-records", "41",
    )  # fmt: skip
    assert code in (0, 1)
    assert document is not None


def test_a_command_is_handed_the_init_folder_and_the_run_s_table(
    audit: Callable[..., tuple[int, dict[str, Any] | None]],
    tmp_path: Path,
    validate_json: Callable[[str, Any], None],
) -> None:
    command = f"{shlex.quote(sys.executable)} copy_init.py {{init}} {{train}} {{out}}"
    code, document = audit(tmp_path / "audit.json", "--command", command)
    assert code == EXIT_OK  # the model every run starts from knows none of the canaries
    assert document is not None
    validate_json("audit-training", document)
    assert document["procedure"]["kind"] == "command"
    assert document["procedure"]["init"]["folder"] == "base"
    assert document["training_runs"][0]["model"]["file"] == "model"
