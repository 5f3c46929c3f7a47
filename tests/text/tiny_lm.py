"""A tiny GPT-2-style causal language model built, trained and saved locally for the tests.

Nothing is downloaded: the text is generated here (random words from a fixed syllable list,
seeded; no licence applies to it), the byte-level BPE tokenizer is trained on it with
``tokenizers``, the model is a :class:`transformers.GPT2Config` of two small layers, and
:func:`build` fine-tunes it for ``epochs`` passes over the training records, so that the
members' loss falls below the population's (memorisation), then saves it with
``save_pretrained`` (safetensors).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

SYLLABLES = ("ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "ve", "do", "gu", "zi", "ha", "be")
CONTEXT = 64


def sentences(n: int, seed: int) -> list[str]:
    """``n`` generated records of 6 to 14 random words each."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        words = [
            "".join(rng.choice(SYLLABLES, size=int(rng.integers(1, 4))))
            for _ in range(int(rng.integers(6, 15)))
        ]
        out.append(" ".join(words).capitalize() + ".")
    return out


def write_jsonl(path: Path, texts: list[str], column: str = "text") -> Path:
    path.write_text("".join(json.dumps({column: t}) + "\n" for t in texts), encoding="utf-8")
    return path


@dataclass(frozen=True)
class TinyCorpus:
    folder: Path
    model: Path
    train: Path
    population: Path
    train_texts: list[str]
    population_texts: list[str]


def tokenizer_for(texts: list[str]) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    raw.train_from_iterator(texts, trainer)
    bos = raw.token_to_id("<|endoftext|>")
    raw.post_processor = processors.TemplateProcessing(
        single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", bos)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=raw,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        model_max_length=CONTEXT,
        # GPT-2's own inputs. Without this, transformers before 5 also returns token_type_ids
        # (zeros), which GPT-2 embeds as token 0 and adds at every position: the model would be
        # fine-tuned on inputs other than those it is audited on.
        model_input_names=["input_ids", "attention_mask"],
    )


def tiny_model(vocabulary: int, seed: int = 0) -> Any:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=vocabulary,
        n_positions=CONTEXT,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=0,
        eos_token_id=0,
    )
    return GPT2LMHeadModel(config)


def fine_tune(model: Any, tokenizer: Any, texts: list[str], epochs: int, seed: int = 0) -> None:
    """``epochs`` passes of AdamW over ``texts`` in batches of 16 (loss on real tokens)."""
    import torch

    torch.manual_seed(seed)
    optimiser = torch.optim.AdamW(model.parameters(), lr=5e-3)
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(texts)).tolist()
        for start in range(0, len(texts), 16):
            batch = [texts[i] for i in order[start : start + 16]]
            encoded = tokenizer(batch, padding=True, return_tensors="pt")
            labels = encoded["input_ids"].masked_fill(encoded["attention_mask"] == 0, -100)
            loss = model(**encoded, labels=labels).loss
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    model.eval()


def build(
    folder: Path, *, epochs: int = 12, n: int = 120, seed: int = 0, safe: bool = True
) -> TinyCorpus:
    """The tiny model fine-tuned for ``epochs`` on ``n`` generated records, saved in
    ``folder/model`` beside ``train.jsonl`` and ``pop.jsonl`` (``n`` records each)."""
    folder.mkdir(parents=True, exist_ok=True)
    train_texts, population_texts = sentences(n, seed), sentences(n, seed + 1000)
    tokenizer = tokenizer_for(sentences(400, seed + 2000) + train_texts + population_texts)
    model = tiny_model(len(tokenizer), seed)
    fine_tune(model, tokenizer, train_texts, epochs, seed)
    target = folder / "model"
    model.save_pretrained(target, safe_serialization=safe)
    tokenizer.save_pretrained(target)
    return TinyCorpus(
        folder,
        target,
        write_jsonl(folder / "train.jsonl", train_texts),
        write_jsonl(folder / "pop.jsonl", population_texts),
        train_texts,
        population_texts,
    )


def copy_model(corpus: TinyCorpus, target: Path, *, without: tuple[str, ...] = ()) -> Path:
    """A copy of the trained model folder, leaving out the files named ``without``."""
    shutil.copytree(corpus.model, target, ignore=shutil.ignore_patterns(*without))
    return target


if __name__ == "__main__":
    # python tests/text/tiny_lm.py OUT [EPOCHS]: the tests' model and data, for docs/text.md
    import sys

    import torch

    torch.set_num_threads(1)
    built = build(Path(sys.argv[1]), epochs=int(sys.argv[2]) if len(sys.argv) > 2 else 12)
    print(built.model, built.train, built.population)
