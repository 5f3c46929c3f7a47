"""A LoRA adapter folder on its base folder (``--base-model``): epsstar's own merge scores
like PEFT's ``merge_and_unload`` of the same adapter, and audits through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tiny_lm import TinyCorpus
from token_tolerances import token_tolerances, whole_path

from epsstar.cli import main
from epsstar.loaders.huggingface import HuggingFaceLoader

peft = pytest.importorskip("peft")

RANK = 4


@pytest.fixture(scope="module")
def adapter(corpus: TinyCorpus, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """A rank-4 LoRA adapter on the attention and MLP layers and the token embedding, with
    random (non-zero) weights, saved by PEFT; and PEFT's merged model."""
    import torch
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(corpus.model)
    config = peft.LoraConfig(
        r=RANK, lora_alpha=8, target_modules=["c_attn", "c_fc", "wte"], fan_in_fan_out=True
    )
    model = peft.get_peft_model(base, config)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if "lora_" in name:  # PEFT starts B at 0: a no-op adapter would prove nothing
                weight.copy_(torch.randn(weight.shape, generator=generator) * 0.2)
    folder = tmp_path_factory.mktemp("lora") / "adapter"
    model.save_pretrained(folder)
    return folder, model.merge_and_unload().eval()


def test_the_merge_scores_like_peft_s(corpus: TinyCorpus, adapter: tuple[Path, Any]) -> None:
    import torch

    folder, merged = adapter
    ours = HuggingFaceLoader().load(folder, base_model=corpus.model)
    assert ours.info.adapter is not None
    assert ours.info.adapter.rank == RANK
    ids = ours.tokenize(corpus.train_texts[:3])
    for x in ids:
        scores = ours.score_tokens(x[None, :], np.array([len(x)]), moments=False)
        with torch.inference_mode():
            logits = merged(input_ids=torch.from_numpy(x[None, :])).logits[0, :-1]
            expected = torch.log_softmax(logits.double(), -1).gather(
                -1, torch.from_numpy(x[1:, None])
            )[:, 0]
        # two float32 merges of one formula, W + s·B·A (rank r: r products, the scale and the
        # add) in each adapted matrix on the path (c_attn and c_fc per block, the tied output
        # layer), then two evaluations, one float32 log-softmax against float64 (the adapter
        # moves the log-probabilities by far more, see below)
        merge = (RANK + 2) * (2 * merged.config.n_layer + 1)
        token = token_tolerances(merged, x, whole_path(merged, x.size) + merge, softmaxes=1)
        np.testing.assert_array_less(np.abs(scores.log_probs[0] - expected.numpy()), token.log_prob)
    plain = HuggingFaceLoader().load(corpus.model)
    unadapted = plain.score_tokens(ids[0][None, :], np.array([len(ids[0])]), moments=False)
    adapted = ours.score_tokens(ids[0][None, :], np.array([len(ids[0])]), moments=False)
    assert np.abs(unadapted.log_probs - adapted.log_probs).max() > 0.01


def test_an_adapter_audits_with_its_base_model(
    corpus: TinyCorpus, adapter: tuple[Path, Any], tmp_path: Path
) -> None:
    folder, _ = adapter
    out = tmp_path / "out.json"
    argv = ["audit", str(folder), "--train", str(corpus.train), "--population"]
    argv += [str(corpus.population), "--text-column", "text", "--quiet", "--json", str(out)]
    argv += ["--extraction-prefix", "8", "--extraction-suffix", "8", "--extraction-records", "20"]
    assert main([*argv, "--base-model", str(corpus.model)]) == 0
    text = json.loads(out.read_text())["text"]
    recorded = text["model"]["adapter"]
    assert recorded["base_model"] == str(corpus.model)
    assert recorded["rank"] == 4
    # the extraction test continues the adapted model's prefixes as any model's
    assert text["extraction"]["records"]["train"]["drawn"] == 20
    assert text["extraction"]["rates"][0]["train"]["records"] > 0


def test_a_relative_base_path_is_read_from_the_adapter_s_folder(
    corpus: TinyCorpus, adapter: tuple[Path, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import shutil

    folder = tmp_path / "adapters" / "a"
    shutil.copytree(adapter[0], folder)
    relative = os.path.relpath(corpus.model, folder)
    config = json.loads((folder / "adapter_config.json").read_text(encoding="utf-8"))
    config["base_model_name_or_path"] = relative
    (folder / "adapter_config.json").write_text(json.dumps(config), encoding="utf-8")
    elsewhere = tmp_path / "elsewhere" / "deeper"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)  # where the relative path leads nowhere
    out = tmp_path / "out.json"
    argv = ["audit", str(folder), "--train", str(corpus.train), "--population"]
    argv += [str(corpus.population), "--text-column", "text", "--quiet", "--json", str(out)]
    assert main(argv) == 0
    recorded = json.loads(out.read_text())["text"]["model"]["adapter"]
    assert Path(recorded["base_model"]).resolve() == Path(corpus.model).resolve()
