"""What a language model repeats (``epsstar audit --text-column ... --extraction``,
docs/text.md "What the model repeats"): the probability of a token under top-k sampling in
closed form, the greedy and sampled continuations against ``generate`` and against sampling
itself, and the audit end to end on a model that memorised its records (the untrained
model's audit in test_text_audit.py runs the extraction test too, and passes its gate);
the arithmetic is tested in tests/statistics/attacks/test_extraction.py."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tiny_lm import TinyCorpus, fine_tune, sentences, tiny_model, tokenizer_for, write_jsonl

from epsstar.audit.model.loading import ModelFile
from epsstar.audit.model.text_model import Sampling, TextModel
from tests.conftest import invoke

#: The memorising model's training file: these many distinct records, each this many times.
DISTINCT, COPIES = 10, 5
PREFIX, SUFFIX = 8, 8


@pytest.fixture(scope="module")
def memoriser(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny GPT-2 trained for 40 epochs on 10 records written 5 times each (duplicated
    records are what models memorise first), beside 50 population records: it repeats
    every training suffix. The folder holds ``model/``, ``train.jsonl`` and ``pop.jsonl``."""
    import torch

    torch.set_num_threads(1)  # the model is tiny: threads only contend on a shared machine
    folder = tmp_path_factory.mktemp("memoriser")
    train = sentences(DISTINCT, 0) * COPIES
    population = sentences(DISTINCT * COPIES, 1000)
    tokenizer = tokenizer_for(sentences(200, 2000) + train + population)
    model = tiny_model(len(tokenizer))
    fine_tune(model, tokenizer, train, epochs=40)
    model.save_pretrained(folder / "model")
    tokenizer.save_pretrained(folder / "model")
    write_jsonl(folder / "train.jsonl", train)
    write_jsonl(folder / "pop.jsonl", population)
    return folder


def _loaded(folder: Path) -> TextModel:
    model = ModelFile(folder).load().model
    assert isinstance(model, TextModel)
    return model


def _records(model: TextModel, texts: list[str], n: int) -> np.ndarray:
    """The first ``n`` texts with at least a prefix and a suffix, cut to them."""
    ids = [x[: PREFIX + SUFFIX] for x in model.tokenize(texts) if x.size >= PREFIX + SUFFIX]
    return np.stack(ids[:n])


def test_a_token_s_sampled_probability_is_its_renormalised_top_k_share() -> None:
    import torch

    from epsstar.loaders.huggingface.continuation import sampled_log_probs

    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]] * 4 + [[1.0, 1.0, 1.0, 0.0]])
    targets = torch.tensor([0, 1, 2, 3, 2])
    found = sampled_log_probs(logits, targets, Sampling(temperature=0.5, top_k=2)).exp()
    # logits / 0.5 = 4, 2, 0, −2; the top 2 renormalised: e^4 / (e^4 + e^2), e^2 / (…)
    first = math.exp(4) / (math.exp(4) + math.exp(2))
    expected = [first, 1 - first, 0.0, 0.0, 1 / 3]  # the last row: a tie at the k-th, kept
    assert found.tolist() == pytest.approx(expected, rel=1e-6)


def test_greedy_by_teacher_forcing_is_what_generate_produces(
    corpus: TinyCorpus, memoriser: Path
) -> None:
    """The greedy continuation is the suffix exactly when every suffix token is the argmax
    under teacher forcing; the greedy loop's tokens are ``generate``'s."""
    import torch
    from transformers import AutoModelForCausalLM

    memorised = json_texts(memoriser / "train.jsonl")
    for folder, texts in ((corpus.model, corpus.train_texts), (memoriser / "model", memorised)):
        model = _loaded(folder)
        ids = _records(model, texts[:12], 6)
        lengths = np.full(len(ids), ids.shape[1])
        correct = model.score_tokens(ids, lengths, moments=False).correct[:, PREFIX - 1 :]
        ours = model.continue_tokens(ids[:, :PREFIX], SUFFIX, sampling=None, seed=0)
        raw = AutoModelForCausalLM.from_pretrained(folder)
        with torch.inference_mode():
            generated = raw.generate(
                torch.from_numpy(ids[:, :PREFIX]),
                attention_mask=torch.ones(len(ids), PREFIX, dtype=torch.long),
                do_sample=False,
                max_new_tokens=SUFFIX,
                min_new_tokens=SUFFIX,
                pad_token_id=0,
            )[:, PREFIX:].numpy()
        np.testing.assert_array_equal(ours, generated)
        exact = (generated == ids[:, PREFIX:]).all(axis=1)
        np.testing.assert_array_equal(correct.all(axis=1), exact)
        # the barely trained model misses every suffix, the memoriser none: both cases seen
        assert exact.all() == (texts is memorised)


def json_texts(path: Path) -> list[str]:
    return [json.loads(line)["text"] for line in path.read_text().splitlines()]


def test_p_z_is_the_share_of_sampled_continuations_that_repeat_the_suffix(
    memoriser: Path,
) -> None:
    model = _loaded(memoriser / "model")
    sampling = Sampling(temperature=1.5, top_k=8)
    ids = _records(model, json_texts(memoriser / "train.jsonl")[:DISTINCT], DISTINCT)
    scores = model.score_tokens(
        ids, np.full(len(ids), ids.shape[1]), moments=False, sampling=sampling
    )
    assert scores.sampled_log_probs is not None
    p_z = np.exp(scores.sampled_log_probs[:, PREFIX - 1 :].sum(axis=1))
    row = int(np.argmin(np.abs(p_z - 0.5)))  # the record whose suffix is drawn about half the time
    assert 0.1 < p_z[row] < 0.9
    draws = 4000
    sampled = model.continue_tokens(
        np.repeat(ids[row : row + 1, :PREFIX], draws, axis=0), SUFFIX, sampling=sampling, seed=3
    )
    share = (sampled == ids[row, PREFIX:]).all(axis=1).mean()
    assert abs(share - p_z[row]) < 4 * math.sqrt(p_z[row] * (1 - p_z[row]) / draws)


def _audit(folder: Path, model: Path, *args: str) -> list[str]:
    return [
        "audit",
        str(model),
        "--train",
        str(folder / "train.jsonl"),
        "--population",
        str(folder / "pop.jsonl"),
        "--text-column",
        "text",
        "--extraction-prefix",
        str(PREFIX),
        "--extraction-suffix",
        str(SUFFIX),
        *args,
    ]


def test_a_memorising_model_repeats_its_records_and_fails_the_gate(
    memoriser: Path,
    tmp_path: Path,
    validate_json: Callable[[str, Any], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    out, junit = tmp_path / "audit.json", tmp_path / "gate.xml"
    argv = _audit(memoriser, memoriser / "model", "--method", "empirical", "--json", str(out))
    report = tmp_path / "audit.html"
    argv += ["--junit-xml", str(junit), "--report", str(report)]
    code, printed, _ = invoke([*argv, "--max-extraction-rate", "0.2"], capsys)
    assert code == 1
    document = json.loads(out.read_text())
    validate_json("audit", document)
    extraction = document["text"]["extraction"]
    rates = {rate["measure"]: rate for rate in extraction["rates"]}
    greedy = rates["greedy exact"]
    assert greedy["train"]["rate"] >= 0.9
    assert greedy["population"]["count"] == 0
    assert greedy["train"]["lower"] > greedy["population"]["upper"]
    for measure in ("sampled exact (any of 10)", "(100, 0.5)-discoverable"):
        assert rates[measure]["train"]["rate"] >= 0.9 > 0 == rates[measure]["population"]["rate"]
    assert extraction["records"]["train"] == {"drawn": 50, "too_short": 0, "tested": 50}
    assert extraction["passed"] is False
    top = extraction["most_extracted"][0]
    assert top["greedy_exact"]
    assert top["p_z"] > 0.1
    assert top["excerpt"] in json_texts(memoriser / "train.jsonl")
    lines = [line.strip() for line in printed.splitlines() if "extraction" in line]
    assert lines[0].startswith(
        f"extraction ({PREFIX}-token prefix, {SUFFIX}-token suffix): greedy exact "
    )
    assert lines[0].endswith(f"excess {greedy['excess']:.3f}")
    assert lines[1] == (
        f"extraction gate FAILED: excess {greedy['excess']:.3f} above the limit 0.2 "
        "(--max-extraction-rate)"
    )
    assert "limits (" not in printed  # the gate's line above says it once
    # the report's release-gate card agrees with the exit code, though no --max-epsilon was set
    html = report.read_text(encoding="utf-8")
    assert 'id="verdict-badge" class="badge fail">FAIL<' in html
    assert (
        f"extraction test FAILED: the training records' greedy exact rate exceeds the "
        f"population's by {greedy['excess']:.3f}, above the limit 0.2" in html
    )
    # the pipeline's outputs carry the same check
    from xml.etree import ElementTree

    (case,) = ElementTree.parse(junit).getroot().iter("testcase")
    assert case.get("name") == "extraction test"
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("type") == "Extraction"
    assert failure.get("message", "").startswith(
        f"greedy exact extraction, training rate minus population rate {greedy['excess']:.4f} "
        "above the limit 0.2"
    )


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--extraction-prefix", "0"], "--extraction-prefix must be an integer ≥ 1. Found 0."),
        (["--max-extraction-rate", "2"], "--max-extraction-rate must be in [0, 1]. Found 2.0."),
        (["--extraction-samples", "0"], "--extraction-samples must be an integer ≥ 1. Found 0."),
        (
            ["--extraction", "--engine", "dask"],
            "the extraction test (--extraction, --max-extraction-rate) runs in this process",
        ),
    ],
)
def test_bad_extraction_options_are_refused_in_one_line(
    tmp_path: Path, extra: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Refused before a model is read: an empty folder with a config.json will do.
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}", encoding="utf-8")
    for name in ("train.jsonl", "pop.jsonl"):
        (tmp_path / name).write_text(json.dumps({"text": "a record"}) + "\n", encoding="utf-8")
    code, _, err = invoke([*_audit(tmp_path, tmp_path / "model"), *extra], capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert said in err


def test_extraction_options_are_refused_in_a_table_audit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["audit", "model.onnx", "--train", "train.csv", "--population", "pop.csv"]
    code, _, err = invoke([*argv, "--label-column", "y", "--extraction-top-k", "5"], capsys)
    assert code == 2
    assert err.strip().splitlines() == [
        "epsstar audit: error: --extraction-top-k applies to text audits (--text-column). "
        "Found it with --label-column 'y'."
    ]


def test_a_prefix_and_suffix_beyond_the_context_are_refused(
    corpus: TinyCorpus, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _audit(corpus.folder, corpus.model, "--extraction-prefix", "60")
    code, _, err = invoke([*argv, "--json", str(tmp_path / "a.json")], capsys)
    assert code == 2
    assert err.strip().endswith("the model's context of 64 tokens. Found 60 + 8 = 68.")
    assert not (tmp_path / "a.json").exists()


def test_the_draws_depend_on_the_seed_not_on_the_batch_size(memoriser: Path) -> None:
    from epsstar.audit.data.extraction_settings import ExtractionSettings
    from epsstar.audit.data.text_records import TextTables
    from epsstar.audit.text_extraction import extraction

    model = _loaded(memoriser / "model")
    settings = ExtractionSettings(PREFIX, SUFFIX, extraction_samples=3, extraction_temperature=2.0)
    found = [
        extraction(
            model,
            TextTables(
                memoriser / "train.jsonl",
                memoriser / "pop.jsonl",
                "text",
                batch,
                extraction=settings,
            ),
            (DISTINCT * COPIES, DISTINCT * COPIES),
            seed,
            0.95,
        ).to_dict()
        for batch, seed in ((1, 0), (16_384, 0), (1, 1))
    ]
    assert found[0] == found[1]
    sampled = [document["rates"][2]["train"]["count"] for document in found]
    assert 0 < sampled[0] < DISTINCT * COPIES
    assert sampled[0] != sampled[2]
