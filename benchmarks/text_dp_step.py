"""Seconds and peak memory of one DP-SGD step of a GPT-2-size model, and of scoring it.

Everything is built here, nothing is downloaded: a GPT-2 of ``transformers.GPT2Config``'s
defaults (12 layers, 768 wide, 12 heads, 50,257 tokens of vocabulary, 124M parameters) with
random weights (the cost of a step does not depend on what the weights learned), saved with
``save_pretrained``; a byte-level BPE tokenizer of 4,096 tokens trained with ``tokenizers``
on records of generated words (random words from a fixed syllable list, seeded; no licence
applies), which the model's larger vocabulary holds; the records, each at least ``--tokens``
tokens long.

Each measurement runs in a fresh interpreter, so that its peak resident memory (``VmHWM``) is
its own:

- ``epsstar train --text-column ... --noise-multiplier 1``, one epoch of ``--batch-size``
  records (q = 1: one Poisson step of every record, each cut to ``--tokens`` tokens), once
  with ``--lora-rank 8`` (the attention's ``c_attn``: 295K trained numbers) and once on every
  weight (per-example gradients of 124M numbers, the physical batch chosen automatically);
  the process's seconds (start, reading the folder twice, the step, saving) and the training
  loop's own (``training.json``'s ``wall_time_seconds``);
- scoring ``--records`` records as ``epsstar audit --text-column`` scores them
  (:func:`epsstar.audit.engines.text_scoring.score_text` through the ``huggingface`` loader,
  the loss attack's plan), the seconds of the scoring alone.

    python benchmarks/text_dp_step.py                # 8 records of 64 tokens, 1,000 scored
    python benchmarks/text_dp_step.py --threads 2 --records 200
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from text_throughput import SYLLABLES, byte_level_tokenizer  # noqa: E402

from epsstar import __version__  # noqa: E402
from epsstar.cli.common.text_table import aligned_table  # noqa: E402

VOCABULARY = 4096

#: The peak resident memory of this process in MiB, printed last by every measured child.
PEAK = (
    "status = open('/proc/self/status').read().splitlines()\n"
    "peak = [int(l.split()[1]) for l in status if l.startswith('VmHWM')][0] / 1024\n"
)


def sentences(n: int, seed: int, words: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [
        " ".join(
            "".join(rng.choice(SYLLABLES, size=int(rng.integers(1, 4)))) for _ in range(words)
        ).capitalize()
        + "."
        for _ in range(n)
    ]


def build(folder: Path, batch: int, records: int, tokens: int, seed: int) -> None:
    """The model folder ``folder/model``, ``train.jsonl`` (``batch`` records) and
    ``score.jsonl`` (``records``), each record at least ``tokens`` tokens long."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    from transformers.utils import logging as transformers_logging

    quiet: Any = transformers_logging
    quiet.disable_progress_bar()  # no "Writing model shards" above the table

    tokenizer, bos = byte_level_tokenizer(sentences(2000, seed + 99, 30), VOCABULARY)
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(GPT2Config(bos_token_id=bos, eos_token_id=bos))  # GPT-2's defaults
    model.save_pretrained(folder / "model")
    tokenizer.save_pretrained(folder / "model")
    # a word takes at least one token: a record of ``tokens`` words is at least that long
    for name, count in (("train", batch), ("score", records)):
        with (folder / f"{name}.jsonl").open("w", encoding="utf-8") as out:
            out.writelines(
                json.dumps({"text": text}) + "\n" for text in sentences(count, seed, tokens)
            )


def _child(code: str, threads: int) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter; the JSON object it prints last."""
    environment = {**os.environ, "EPSSTAR_THREADS": str(threads)}
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, env=environment
    )
    if found.returncode != 0:
        raise SystemExit(f"a measured run failed: {found.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(found.stdout.strip().splitlines()[-1])
    return result


def train_step(folder: Path, name: str, extra: list[str], args: argparse.Namespace) -> Any:
    """One ``epsstar train --text-column`` run; its seconds, loop seconds and peak MiB."""
    out = folder / name
    words = [
        "train", "--text-column", "text", "--data", str(folder / "train.jsonl"),
        "--init", str(folder / "model"), "--out", str(out), "--epochs", "1",
        "--batch-size", str(args.batch), "--max-length", str(args.tokens),
        "--noise-multiplier", "1", "--threads", str(args.threads), "--quiet", *extra,
    ]  # fmt: skip
    code = (
        textwrap.dedent(f"""
        import json, time, warnings
        warnings.simplefilter("ignore")
        from epsstar.cli.main import main
        started = time.perf_counter()
        code = main({words!r})
        seconds = time.perf_counter() - started
        assert code == 0, code
        record = json.load(open({str(out / "training.json")!r}))
    """)
        + PEAK
        + (
            "print(json.dumps({'seconds': seconds, 'loop': record['wall_time_seconds'], "
            "'peak': peak, 'trained': record['model']['trained_parameters'], "
            "'physical': record['hyperparameters']['physical_batch']}))\n"
        )
    )
    return _child(code, args.threads)


def scoring(folder: Path, args: argparse.Namespace) -> Any:
    """``--records`` records scored as ``epsstar audit --text-column`` scores them."""
    code = (
        textwrap.dedent(f"""
        import json, time
        from pathlib import Path
        from epsstar.audit.engines.text_scoring import ScoringPlan, score_text
        from epsstar.audit.model.loading import ModelFile
        from epsstar.audit.model.text_model import text_model_of
        from epsstar.audit.data.text_records import DEFAULT_TEXT_BATCH
        loaded = ModelFile(Path({str(folder / "model")!r})).load()
        model = text_model_of(loaded.model, loaded.loader.name)
        started = time.perf_counter()
        side, _ = score_text(
            model,
            Path({str(folder / "score.jsonl")!r}),
            "text",
            ScoringPlan(DEFAULT_TEXT_BATCH),
            role="population",
        )
        seconds = time.perf_counter() - started
        tokens = int(side.tokens.sum())
    """)
        + PEAK
        + (
            "print(json.dumps({'seconds': seconds, 'loop': seconds, 'peak': peak, "
            "'tokens': tokens}))\n"
        )
    )
    return _child(code, args.threads)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=8, help="records in the DP step")
    parser.add_argument("--tokens", type=int, default=64, help="tokens per record in the step")
    parser.add_argument("--records", type=int, default=1000, help="records scored")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of each run")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory)
        started = time.perf_counter()
        build(folder, args.batch, args.records, args.tokens, args.seed)
        built = time.perf_counter() - started
        rows = []
        for name, extra in (("one DP step, LoRA rank 8", ["--lora-rank", "8"]),
                            ("one DP step, every weight", [])):  # fmt: skip
            found = train_step(folder, name.replace(" ", "-").replace(",", ""), extra, args)
            rows.append(
                [
                    name,
                    f"{found['trained']:,}",
                    str(found["physical"]),
                    f"{found['loop']:.1f}",
                    f"{found['seconds']:.1f}",
                    f"{found['peak']:,.0f}",
                ]
            )
        scored = scoring(folder, args)
        rows.append(
            [
                f"score {args.records:,} records ({scored['tokens']:,} tokens)",
                "-",
                "-",
                f"{scored['seconds']:.1f}",
                "-",
                f"{scored['peak']:,.0f}",
            ]
        )
    print(
        f"epsstar {__version__}, {platform.processor() or platform.machine()}, "
        f"{args.threads} thread(s); GPT-2 124M with random weights (built in {built:.0f} s); "
        f"the step: {args.batch} records of {args.tokens} tokens"
    )
    header = ["run", "trained numbers", "physical batch", "seconds", "process s", "peak MiB"]
    print(aligned_table([header, *rows], left_columns=1))


if __name__ == "__main__":
    main()
