"""``epsstar train --text-column``: DP-SGD fine-tuning of the tiny GPT-2, end to end.

One small corpus (60 generated records, the tiny model untrained) serves every test; each run
is a few steps of a 2-layer, 32-wide model, so the file takes seconds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from tiny_lm import TinyCorpus, build, write_jsonl

from epsstar.training.text.lora import lora_layout
from epsstar.training.text.per_example import padded, summed_gradient
from epsstar.training.text.records import tokenised
from epsstar.training.text.trainer import record_loss
from tests.conftest import invoke

#: The options every run here shares: a few steps of the tiny model.
SMALL = ["--epochs", "2", "--batch-size", "8", "--max-length", "24", "--threads", "1"]


@pytest.fixture(scope="module")
def start(tmp_path_factory: pytest.TempPathFactory) -> TinyCorpus:
    """The tiny GPT-2, never trained, beside 60 training and 60 population records."""
    torch.set_num_threads(1)
    return build(tmp_path_factory.mktemp("start"), epochs=0, n=60)


def _train(
    corpus: TinyCorpus, out: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str, str]:
    words = ["train", "--text-column", "text", "--data", str(corpus.train)]
    return invoke([*words, "--init", str(corpus.model), "--out", str(out), *SMALL, *extra], capsys)


def _record(out: Path) -> Any:
    return json.loads((out / "training.json").read_text(encoding="utf-8"))


def _model_and_records(corpus: TinyCorpus) -> tuple[Any, list[np.ndarray]]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(corpus.model, attn_implementation="eager")
    tokenizer = AutoTokenizer.from_pretrained(corpus.model)
    records = tokenised(corpus.train_texts[:6], tokenizer, 64)
    return model.eval().requires_grad_(False), list(records.ids)


@pytest.mark.parametrize("lora", [False, True], ids=["every weight", "lora"])
def test_the_clipped_sum_is_a_loop_over_the_examples(start: TinyCorpus, lora: bool) -> None:
    """Σ min(1, C/‖∇_i‖)·∇_i by vmap over padded microbatches equals each example's gradient
    taken alone (unpadded, by autograd), clipped and summed, to float32 rounding: the two
    add the same numbers in another order (batched matrix products, the microbatches' sums),
    so they agree to a few units in the 7th digit, not bit for bit."""
    model, records = _model_and_records(start)
    layout = lora_layout(model, 4, 8.0) if lora else None
    generator = torch.Generator().manual_seed(3)
    if layout is None:
        params = {k: v.detach().clone() for k, v in model.named_parameters()}
    else:
        params = layout.initial(generator)
        params = {
            k: v + 0.05 * torch.randn(v.shape, generator=generator) for k, v in params.items()
        }
    loss = record_loss(model, layout)
    alone = []
    for ids in records:
        one = padded([ids], torch.device("cpu"))
        own = {k: v.clone().requires_grad_(True) for k, v in params.items()}
        gradients = torch.autograd.grad(loss(own, one.ids[0], one.real[0]), list(own.values()))
        norm = float(torch.sqrt(sum((g.double() ** 2).sum() for g in gradients)))
        alone.append((dict(zip(own, gradients, strict=True)), norm))
    clip = float(np.median([norm for _, norm in alone]))  # half the examples clipped, half not
    expected = {name: torch.zeros_like(value) for name, value in params.items()}
    for gradients, norm in alone:
        for name, gradient in gradients.items():
            expected[name] += gradient * min(1.0, clip / norm)
    found = summed_gradient(
        loss, params, records, clip=clip, physical=4, device=torch.device("cpu")
    )
    for name, value in expected.items():
        torch.testing.assert_close(found.gradients[name], value, rtol=1e-5, atol=1e-6)


def test_the_noise_has_standard_deviation_sigma_times_clip(
    start: TinyCorpus, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    """The trainer asks for noise of σ·C, and the noise drawn has that standard deviation."""
    from epsstar.training.text import trainer

    asked: list[float] = []
    noised = trainer._noised

    def spy(summed: Any, noise_std: float, normaliser: float, generator: Any) -> Any:
        asked.append(noise_std)
        return noised(summed, noise_std, normaliser, generator)

    monkeypatch.setattr(trainer, "_noised", spy)
    out = tmp_path / "out"
    code, _, err = _train(start, out, capsys, "--noise-multiplier", "1.3", "--clip", "0.7")
    assert code == 0, err
    privacy = _record(out)["privacy"]
    assert asked == [pytest.approx(1.3 * 0.7)] * len(asked)
    assert privacy["noise_std"] == asked[0]
    zeros = {"w": torch.zeros(400_000)}
    drawn = noised(zeros, 0.91, 1.0, torch.Generator().manual_seed(0))["w"]
    # the sample std of 400,000 normal draws is within 0.5 % of σ with probability > 0.99
    assert float(drawn.std()) == pytest.approx(0.91, rel=5e-3)
    assert float(drawn.mean()) == pytest.approx(0.0, abs=0.01)


def test_the_same_seed_gives_the_same_weights(
    start: TinyCorpus, tmp_path: Path, capsys: pytest.CaptureFixture[str], validate_json: Any
) -> None:
    """Bit for bit on the CPU; another seed gives other weights. The record holds to its
    schema, and the accountant's ε for the chosen σ is within the target."""
    weights = []
    for name, seed in (("a", "5"), ("b", "5"), ("c", "6")):
        out = tmp_path / name
        code, _, err = _train(start, out, capsys, "--target-epsilon", "4", "--seed", seed)
        assert code == 0, err
        weights.append((out / "model.safetensors").read_bytes())
        record = _record(out)
        validate_json("text-training", record)
        assert 3.5 < record["privacy"]["epsilon"] <= 4.0
        assert record["model"]["lora"] is None
        assert record["model"]["trained_parameters"] == record["model"]["n_parameters"]
    assert weights[0] == weights[1] != weights[2]
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted(record["files"])
    assert json.loads((tmp_path / "a" / "epsstar.privacy").read_text()) == {
        "private": True,
        "epsilon": _record(tmp_path / "a")["privacy"]["epsilon"],
        "delta": _record(tmp_path / "a")["privacy"]["delta"],
        "accountant": "pld",
    }


def test_a_lora_adapter_is_audited_with_its_declared_epsilon(
    start: TinyCorpus, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The adapter folder goes to ``epsstar audit --text-column`` as it is; the audit's JSON
    and summary show the ε the training declared."""
    out = tmp_path / "adapter"
    code, _, err = _train(
        start, out, capsys, "--target-epsilon", "4", "--lora-rank", "4", "--max-length", "8"
    )
    assert code == 0, err
    assert "epsstar: warning: 60 of 60 records are longer than --max-length 8 tokens" in err
    record = _record(out)
    assert record["data"]["truncated"] == 60
    assert record["model"]["lora"]["rank"] == 4
    config = json.loads((out / "adapter_config.json").read_text())
    assert Path(config["base_model_name_or_path"]) == start.model.resolve()
    report = tmp_path / "audit.json"
    code, shown, err = invoke(
        [
            "audit",
            str(out),
            "--text-column",
            "text",
            "--train",
            str(start.train),
            "--population",
            str(start.population),
            "--method",
            "empirical",
            "--json",
            str(report),
        ],
        capsys,
    )
    assert code == 0, err
    audited = json.loads(report.read_text())
    assert audited["declared_privacy"]["epsilon"] == record["privacy"]["epsilon"]
    assert audited["text"]["model"]["adapter"]["rank"] == 4
    assert f"declared: DP-SGD at epsilon = {record['privacy']['epsilon']:.4g}" in shown


def test_overwrite_removes_the_earlier_runs_files_it_does_not_write(
    start: TinyCorpus, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An adapter, then a full model, then an adapter again into one folder with
    ``--overwrite``: each time the folder holds exactly the files the new record lists, so an
    earlier adapter never sits beside a new full model (the loader would read the adapter),
    and a file of the user's own is left alone."""
    out = tmp_path / "out"
    mine = out / "notes.txt"
    layouts = [
        (["--lora-rank", "4"], "adapter_config.json", "model.safetensors"),
        ([], "model.safetensors", "adapter_config.json"),
        (["--lora-rank", "4"], "adapter_model.safetensors", "config.json"),
    ]
    for extra, present, absent in layouts:
        code, _, err = _train(start, out, capsys, "--overwrite", *extra)
        assert code == 0, err
        if not mine.exists():
            mine.write_text("kept\n")
        listed = _record(out)["files"]
        assert present in listed
        assert absent not in listed
        assert sorted(p.name for p in out.iterdir()) == sorted([*listed, mine.name])
    assert mine.read_text() == "kept\n"


def test_peft_reads_the_adapter_as_the_audit_does(
    start: TinyCorpus, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """PEFT loads the adapter folder as its own, and its merged model gives the audit's
    log-probabilities: both add (α/r)·B·A to the same float32 weights, so they agree to
    float32 rounding (a few units in the 7th digit of a log-probability of order 1)."""
    peft = pytest.importorskip("peft")
    from transformers import AutoModelForCausalLM

    from epsstar.loaders.huggingface import HuggingFaceLoader

    out = tmp_path / "adapter"
    code, _, err = _train(start, out, capsys, "--noise-multiplier", "1", "--lora-rank", "2")
    assert code == 0, err
    base = AutoModelForCausalLM.from_pretrained(start.model)
    merged = peft.PeftModel.from_pretrained(base, out).merge_and_unload().eval()
    ours = HuggingFaceLoader().load(out)
    ids = ours.tokenize(start.train_texts[:1])[0]
    scores = ours.score_tokens(ids[None, :], np.array([len(ids)]), moments=False)
    with torch.inference_mode():
        logits = merged(input_ids=torch.from_numpy(ids[None, :])).logits[0, :-1]
    expected = torch.log_softmax(logits, -1).gather(-1, torch.from_numpy(ids[1:, None]))[:, 0]
    np.testing.assert_allclose(scores.log_probs[0], expected.numpy(), rtol=0, atol=1e-5)
    plain = HuggingFaceLoader().load(start.model)
    before = plain.score_tokens(ids[None, :], np.array([len(ids)]), moments=False)
    assert np.abs(before.log_probs - scores.log_probs).max() > 1e-4  # the adapter moved it


def _mean_token_loss(folder: Path, texts: list[str]) -> float:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    encoded = tokenizer(texts, padding=True, return_tensors="pt")
    labels = encoded["input_ids"].masked_fill(encoded["attention_mask"] == 0, -100)
    with torch.no_grad():
        return float(model(**encoded, labels=labels).loss)


def test_a_non_private_fine_tune_lowers_the_members_loss(
    start: TinyCorpus, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plain"
    code, shown, err = _train(start, out, capsys, "--lr", "0.005", "--epochs", "4")
    assert code == 0, err
    assert "without privacy" in shown
    record = _record(out)
    assert record["kind"] == "non-private"
    assert record["privacy"] is None
    assert json.loads((out / "epsstar.privacy").read_text()) == {"private": False}
    before = _mean_token_loss(start.model, start.train_texts)
    after = _mean_token_loss(out, start.train_texts)
    assert after < before - 1.0, (before, after)


def _not_causal(folder: Path, start: TinyCorpus) -> Path:
    folder.mkdir()
    config = {"model_type": "bert", "architectures": ["BertForMaskedLM"]}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "model.safetensors").write_bytes((start.model / "model.safetensors").read_bytes())
    return folder


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"--init": "missing"}, "--init: the model to fine-tune must be a Hugging Face model"),
        ({"--init": "bert"}, "must be a causal language model"),
        ({"--text-column": "body"}, "body"),
        ({"--lora-rank": "0"}, "--lora-rank must be"),
        ({"--max-length": "0"}, "--max-length must be"),
        ({"--max-length": "65"}, "--max-length must be at most the model's context of 64"),
        ({"--hidden": "8"}, "--hidden applies to tables"),
    ],
    ids=["no init", "not causal", "no column", "lora rank 0", "length 0", "length", "hidden"],
)
def test_bad_inputs_are_one_line_and_exit_2(
    start: TinyCorpus,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    change: dict[str, str],
    says: str,
) -> None:
    options = {"--text-column": "text", "--init": str(start.model)}
    options.update(change)
    if options["--init"] in ("missing", "bert"):
        named = tmp_path / options["--init"]
        options["--init"] = str(_not_causal(named, start) if named.name == "bert" else named)
    words = [word for pair in options.items() for word in pair]
    out = tmp_path / "out"
    code, _, err = invoke(
        ["train", "--data", str(start.train), *SMALL, *words, "--out", str(out)], capsys
    )
    assert code == 2
    lines = [line for line in err.splitlines() if line.startswith("epsstar train: error:")]
    assert len(lines) == 1, err
    assert says in lines[0]
    assert "Traceback" not in err
    assert not out.exists()


def test_text_options_without_text_column_are_refused(
    start: TinyCorpus, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = write_jsonl(tmp_path / "t.jsonl", ["a"])
    code, _, err = invoke(
        [
            "train",
            "--data",
            str(table),
            "--init",
            str(start.model),
            "--out",
            str(tmp_path / "o"),
            "--epochs",
            "1",
        ],
        capsys,
    )
    assert code == 2
    assert "--init fine-tunes a language model: give --text-column too" in err


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")
def test_fine_tuning_on_cuda_gives_the_cpu_model(
    start: TinyCorpus, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The batches and the noise are drawn on the CPU: the same run on the GPU gives the
    CPU's weights up to the devices' rounding."""
    from safetensors.torch import load_file

    folders = {}
    for device in ("cpu", "cuda"):
        folders[device] = tmp_path / device
        code, _, err = _train(
            start, folders[device], capsys, "--target-epsilon", "4", "--device", device
        )
        assert code == 0, err
    cpu = load_file(folders["cpu"] / "model.safetensors")
    gpu = load_file(folders["cuda"] / "model.safetensors")
    for name, value in cpu.items():
        torch.testing.assert_close(gpu[name], value, rtol=1e-3, atol=1e-4)
