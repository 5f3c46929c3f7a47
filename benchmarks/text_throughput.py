"""Tokens per second of epsstar's text scoring against a plain transformers forward pass.

The issue's goal (language models): epsstar scores a corpus at no less than 0.9x the tokens
per second of a plain transformers forward pass over the same tokens, in the same run.

Everything is built here, nothing is downloaded: records of generated words (random words
from a fixed syllable list, seeded; no licence applies), a byte-level BPE tokenizer trained
on them with ``tokenizers``, and a GPT-2 of the chosen size with random weights (the cost of a
forward pass does not depend on what the weights learned), saved with ``save_pretrained``
(safetensors) and loaded by epsstar's ``huggingface`` loader. Every record fits the
model's context, so both sides score exactly the same tokens.

Three ways over the same two files (training and population, ``--records`` each), in turn,
``--repeats`` times (the median is shown; the first pass of each is a warm-up):

- ``plain, file order``: what one writes with transformers alone: the texts (already in
  memory) in batches of ``--batch-size``, ``tokenizer(batch, padding=True)`` and
  ``model(**encoded).logits`` under ``torch.inference_mode``, nothing else;
- ``plain, sorted``: the same forward, the records tokenised at once and sorted by length
  before batching (less padding): the floor the goal is measured against;
- ``epsstar``: :func:`epsstar.audit.engines.text_scoring.score_text` with the loss attack's
  plan: reading the file, tokenising, sliding windows, batches, the forward pass, the
  token log-probabilities and each record's mean token loss.

Then each attack's extra cost over the plain sorted forward pass, the plans scored in turn
``--repeats`` times: what an audit with that attack alone costs beyond the forward pass is
epsstar's scoring with the loss attack's plan minus the forward pass, plus the attack's own
scoring over the loss attack's (``zlib`` compresses each record's text, which every scoring
does; ``mink`` takes the lowest token log-probabilities; ``minkpp`` also the moments of the
log-probabilities over the vocabulary; ``lowercase`` scores the lower-cased texts once more;
``ref`` loads one reference model of the same size and scores the texts with it), plus the
statistics every attack adds to the audit (the estimator, the lower bound and the leak test
on the two sides' scores: :func:`epsstar.audit.attacks.from_losses.audit_losses`).

    python benchmarks/text_throughput.py                    # the small model, 500 records a side
    python benchmarks/text_throughput.py --size tiny --records 500 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from epsstar import __version__
from epsstar.audit.attacks.from_losses import audit_losses
from epsstar.audit.engines.text_scoring import ScoringPlan, score_text
from epsstar.audit.model.loading import ModelFile
from epsstar.audit.model.text_model import TextModel, text_model_of
from epsstar.audit.options import AuditOptions
from epsstar.cli.common.text_table import aligned_table
from epsstar.statistics.utility import Utility

SYLLABLES = ("ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "ve", "do", "gu", "zi", "ha", "be")
ROLES = ("train", "population")


@dataclass(frozen=True, slots=True)
class Size:
    """A GPT-2 configuration: layers, width, heads, context, the tokenizer's vocabulary."""

    layers: int
    width: int
    heads: int
    context: int
    vocabulary: int


SIZES = {
    "tiny": Size(2, 32, 2, 64, 300),  # the tests' model (tests/text/tiny_lm.py)
    "small": Size(4, 256, 4, 256, 4096),
    "medium": Size(6, 512, 8, 512, 8192),
}


def sentences(n: int, seed: int, most_words: int) -> list[str]:
    """``n`` records of generated words, their lengths spread like real ones (log-normal,
    median 30 words, at most ``most_words``)."""
    rng = np.random.default_rng(seed)
    lengths = np.clip(rng.lognormal(np.log(30), 0.8, size=n).astype(int), 4, most_words)
    out = []
    for length in lengths:
        words = [
            "".join(rng.choice(SYLLABLES, size=int(rng.integers(1, 4)))) for _ in range(length)
        ]
        out.append(" ".join(words).capitalize() + ".")
    return out


def byte_level_tokenizer(
    texts: list[str], vocabulary: int, context: int | None = None
) -> tuple[Any, int]:
    """A GPT-2-style byte-level BPE tokenizer of ``vocabulary`` tokens trained on ``texts``
    (``<|endoftext|>`` begins every sequence and pads), and that token's id; ``context``
    is its ``model_max_length`` (``None``: transformers' default)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE())
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    raw.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=vocabulary,
            special_tokens=["<|endoftext|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    bos = raw.token_to_id("<|endoftext|>")
    assert bos is not None  # a special token of the trainer, in every vocabulary it learns
    raw.post_processor = processors.TemplateProcessing(
        single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", bos)]
    )
    fast: Any = PreTrainedTokenizerFast
    tokenizer = fast(
        tokenizer_object=raw,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        **({} if context is None else {"model_max_length": context}),
        # GPT-2's own inputs (transformers before 5 would add token_type_ids, which GPT-2
        # embeds as token 0 at every position).
        model_input_names=["input_ids", "attention_mask"],
    )
    return tokenizer, bos


def build(folder: Path, size: Size, records: int, seed: int) -> dict[str, list[str]]:
    """The model folder in ``folder/model`` and the two JSON Lines files; their texts."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    # Words of 1 to 3 syllables take at most 3 tokens, a space included: a record of
    # (context - 2) / 3 words always fits the context with its beginning-of-sequence token.
    most = max(4, (size.context - 2) // 3)
    texts = {role: sentences(records, seed + i, most) for i, role in enumerate(ROLES)}
    tokenizer, bos = byte_level_tokenizer(
        sentences(2000, seed + 99, most), size.vocabulary, size.context
    )
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=size.context,
        n_embd=size.width,
        n_layer=size.layers,
        n_head=size.heads,
        bos_token_id=bos,
        eos_token_id=bos,
    )
    GPT2LMHeadModel(config).save_pretrained(folder / "model")
    tokenizer.save_pretrained(folder / "model")
    for role, lines in texts.items():
        with (folder / f"{role}.jsonl").open("w", encoding="utf-8") as out:
            out.writelines(json.dumps({"text": t}) + "\n" for t in lines)
    return texts


@dataclass(frozen=True, slots=True)
class Plain:
    """The model and tokenizer as transformers alone loads them from the folder."""

    model: Any
    tokenizer: Any

    @classmethod
    def load(cls, folder: Path) -> Plain:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model: Any = AutoModelForCausalLM.from_pretrained(
            str(folder), local_files_only=True, dtype=torch.float32
        )
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        return cls(model.eval(), tokenizer)

    def file_order(self, texts: list[str], batch: int) -> int:
        """A forward pass over ``texts`` in batches, in file order; the tokens fed."""
        import torch

        fed = 0
        with torch.inference_mode():
            for start in range(0, len(texts), batch):
                encoded = self.tokenizer(
                    texts[start : start + batch], padding=True, return_tensors="pt"
                )
                self.model(**encoded, use_cache=False)
                fed += int(encoded["attention_mask"].sum())
        return fed

    def sorted_by_length(self, texts: list[str], batch: int) -> int:
        """The same forward pass, the records tokenised at once and sorted by length."""
        import torch

        ids = self.tokenizer(texts, return_attention_mask=False)["input_ids"]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]), reverse=True)
        fed = 0
        with torch.inference_mode():
            for start in range(0, len(order), batch):
                rows = [ids[i] for i in order[start : start + batch]]
                width = len(rows[0])
                tokens = torch.zeros((len(rows), width), dtype=torch.long)
                mask = torch.zeros((len(rows), width), dtype=torch.long)
                for r, row in enumerate(rows):
                    tokens[r, : len(row)] = torch.tensor(row)
                    mask[r, : len(row)] = 1
                self.model(input_ids=tokens, attention_mask=mask, use_cache=False)
                fed += int(mask.sum())
        return fed


@dataclass(frozen=True, slots=True)
class Seconds:
    """The processor time of the benchmark's process (every thread) and the wall time."""

    cpu: float
    wall: float


def timed(run: Callable[[], object]) -> Seconds:
    cpu, wall = time.process_time(), time.perf_counter()
    run()
    return Seconds(time.process_time() - cpu, time.perf_counter() - wall)


def medians(runs: list[Seconds]) -> Seconds:
    return Seconds(statistics.median(r.cpu for r in runs), statistics.median(r.wall for r in runs))


def epsstar_pass(model: TextModel, folder: Path, plan: ScoringPlan) -> list[Any]:
    """Both files scored by epsstar with ``plan``; their statistics."""
    return [score_text(model, folder / f"{r}.jsonl", "text", plan, role=r)[0] for r in ROLES]


def measure(
    folder: Path, texts: dict[str, list[str]], batch: int, repeats: int
) -> tuple[dict[str, Seconds], int, TextModel]:
    """Median seconds of each way over both files, ``repeats`` times in turn after a
    warm-up; the tokens fed to the model; epsstar's model."""
    plain = Plain.load(folder / "model")
    loaded = ModelFile(folder / "model").load()
    model = text_model_of(loaded.model, loaded.loader.name)
    plan = ScoringPlan(batch)
    both = [*texts["train"], *texts["population"]]
    ways: dict[str, Callable[[], object]] = {
        "plain, file order": lambda: plain.file_order(both, batch),
        "plain, sorted": lambda: plain.sorted_by_length(both, batch),
        "epsstar": lambda: epsstar_pass(model, folder, plan),
    }
    tokens = plain.sorted_by_length(both, batch)  # also the warm-up
    scored = sum(int(s.tokens.sum()) + s.rows for s in epsstar_pass(model, folder, plan))
    if scored != tokens:
        raise SystemExit(f"epsstar scored {scored} tokens, the plain forward {tokens}")
    plain.file_order(both, batch)
    runs: dict[str, list[Seconds]] = {name: [] for name in ways}
    for _ in range(repeats):
        for name, run in ways.items():
            runs[name].append(timed(run))
    return {name: medians(found) for name, found in runs.items()}, tokens, model


@dataclass(frozen=True, slots=True)
class AttackCost:
    """What one attack adds, in median processor seconds: its scoring over the loss
    attack's (``scoring``) and its statistics (``statistics``)."""

    attack: str
    adds: str
    scoring: float
    statistics: float


def attack_costs(
    model: TextModel, folder: Path, texts: dict[str, list[str]], batch: int, repeats: int
) -> tuple[float, list[AttackCost]]:
    """The loss attack's scoring (median processor seconds) and each attack's extra cost,
    the plans scored in turn ``repeats`` times (see the module docstring)."""
    both = [*texts["train"], *texts["population"]]

    def reference() -> None:
        loaded = ModelFile(folder / "model").load()
        epsstar_pass(text_model_of(loaded.model, loaded.loader.name), folder, ScoringPlan(batch))

    ways: dict[str, Callable[[], object]] = {
        "loss": lambda: epsstar_pass(model, folder, ScoringPlan(batch)),
        "zlib": lambda: [zlib.compress(t.encode("utf-8")) for t in both],
        "mink": lambda: epsstar_pass(model, folder, ScoringPlan(batch, min_k=0.2)),
        "minkpp": lambda: epsstar_pass(model, folder, ScoringPlan(batch, 0.2, moments=True)),
        "lowercase": lambda: epsstar_pass(model, folder, ScoringPlan(batch, lowercase=True)),
        "ref": reference,
    }
    train, population = epsstar_pass(model, folder, ScoringPlan(batch))
    utility = {
        role: Utility(side.rows, side.correct / int(side.tokens.sum()), None)
        for role, side in zip(ROLES, (train, population), strict=True)
    }
    ways["statistics"] = lambda: audit_losses(
        train.loss, population.loss, utility=utility, options=AuditOptions()
    )
    runs: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(repeats):
        for name, run in ways.items():
            runs[name].append(timed(run).cpu)
    cpu = {name: statistics.median(found) for name, found in runs.items()}
    loss, stats = cpu["loss"], cpu["statistics"]
    return loss, [
        AttackCost("loss", "the scoring itself", 0.0, stats),
        AttackCost("zlib", f"zlib, in every scoring ({cpu['zlib']:.2f} s)", 0.0, stats),
        AttackCost("mink", "the lowest 20 % of log-probabilities", cpu["mink"] - loss, stats),
        AttackCost("minkpp", "moments over the vocabulary", cpu["minkpp"] - loss, stats),
        AttackCost("lowercase", "a second pass, lower-cased", cpu["lowercase"] - loss, stats),
        AttackCost("ref", "loading one reference model, its pass", cpu["ref"], stats),
    ]


def report(size: str, args: argparse.Namespace, seconds: dict[str, Seconds], tokens: int) -> None:
    import torch
    import transformers

    shape = SIZES[size]
    print(
        f"epsstar {__version__}, transformers {transformers.__version__}, torch "
        f"{torch.__version__}, {torch.get_num_threads()} torch thread(s), "
        f"{platform.machine()}, {os.cpu_count()} cores"
    )
    print(
        f"model {size}: GPT-2 of {shape.layers} layers, width {shape.width}, context "
        f"{shape.context}, vocabulary {shape.vocabulary}; {args.records:,} records a side, "
        f"{tokens:,} tokens, batches of {args.batch_size}; median of {args.repeats} runs "
        f"after a warm-up"
    )
    floor = seconds["plain, sorted"]
    rows = [["way", "CPU s", "wall s", "tokens/CPU s", "x plain sorted (CPU)", "(wall)"]]
    for way, found in seconds.items():
        rows.append(
            [
                way,
                f"{found.cpu:.2f}",
                f"{found.wall:.2f}",
                f"{tokens / found.cpu:,.0f}",
                f"{floor.cpu / found.cpu:.2f}",
                f"{floor.wall / found.wall:.2f}",
            ]
        )
    print(aligned_table(rows, left_columns=1))


def report_costs(plain: Seconds, loss: float, costs: list[AttackCost]) -> None:
    """Each attack's extra processor seconds over the plain sorted forward pass's."""
    print(
        f"each attack alone over the plain sorted forward pass ({plain.cpu:.2f} CPU s); "
        f"epsstar's scoring with the loss attack: {loss:.2f} CPU s"
    )
    rows = [["attack", "adds", "scoring s", "statistics s", "extra CPU s", "x plain sorted"]]
    for cost in costs:
        extra = loss - plain.cpu + cost.scoring + cost.statistics
        rows.append(
            [
                cost.attack,
                cost.adds,
                f"{cost.scoring:.2f}",
                f"{cost.statistics:.2f}",
                f"{extra:+.2f}",
                f"{(plain.cpu + extra) / plain.cpu:.2f}",
            ]
        )
    print(aligned_table(rows, left_columns=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--records", type=int, default=500, help="records per side")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's own)")
    parser.add_argument("--no-attacks", action="store_true", help="skip the attacks' costs")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="epsstar-text-throughput-") as name:
        folder = Path(name)
        texts = build(folder, SIZES[args.size], args.records, args.seed)
        seconds, tokens, model = measure(folder, texts, args.batch_size, args.repeats)
        report(args.size, args, seconds, tokens)
        if not args.no_attacks:
            print()
            loss, costs = attack_costs(model, folder, texts, args.batch_size, args.repeats)
            report_costs(seconds["plain, sorted"], loss, costs)


if __name__ == "__main__":
    main()
