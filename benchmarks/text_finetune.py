"""A plain (non-private) fine-tuning of a Hugging Face causal language model, the procedure
``benchmarks/text_training_audit.py`` audits with text canaries.

It reads the text records of a JSON Lines, CSV or Parquet file (column ``--text-column``),
fine-tunes the model folder it starts from with AdamW for ``--epochs`` passes in batches of
``--batch-size`` records cut to ``--max-length`` tokens (the loss on every real token), and
saves the model and its tokenizer into the output folder (``save_pretrained``, safetensors).
Nothing is downloaded. As a command of ``epsstar audit-training``::

    python benchmarks/text_finetune.py {init} {train} {out} --seed {seed} --epochs 4

or as ``--function text_finetune:fit`` (with ``benchmarks`` on the import path).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

EPOCHS, BATCH_SIZE, MAX_LENGTH, LR, TEXT_COLUMN = 4, 16, 64, 5e-3, "text"


def read_texts(path: Path, column: str) -> list[str]:
    """The text column of a JSON Lines, CSV or Parquet file."""
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        lines = path.read_text(encoding="utf-8").splitlines()
        return [str(json.loads(line)[column]) for line in lines if line.strip()]
    import pandas as pd

    frame = pd.read_csv(path) if path.suffix.lower() == ".csv" else pd.read_parquet(path)
    return [str(text) for text in frame[column]]


def fine_tune(
    init: Path,
    train: Path,
    out: Path,
    *,
    seed: int = 0,
    epochs: int = EPOCHS,
    batch_size: int = BATCH_SIZE,
    max_length: int = MAX_LENGTH,
    lr: float = LR,
    text_column: str = TEXT_COLUMN,
) -> None:
    """Fine-tune the model folder ``init`` on ``train``'s records; save it into ``out``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(seed)
    tokenizer: Any = AutoTokenizer.from_pretrained(str(init), local_files_only=True)
    model: Any = AutoModelForCausalLM.from_pretrained(str(init), local_files_only=True)
    texts = read_texts(train, text_column)
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(texts)).tolist()
        for start in range(0, len(texts), batch_size):
            batch = [texts[i] for i in order[start : start + batch_size]]
            encoded = tokenizer(
                batch,
                padding=True,
                truncation=True,
                max_length=max_length,
                return_tensors="pt",
                return_token_type_ids=False,
            )
            labels = encoded["input_ids"].masked_fill(encoded["attention_mask"] == 0, -100)
            loss = model(**encoded, labels=labels).loss
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    model.eval()
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)


def fit(train_path: str, out_dir: str, seed: int, init: str) -> None:
    """``--function text_finetune:fit``: :func:`fine_tune` with the defaults."""
    fine_tune(Path(init), Path(train_path), Path(out_dir), seed=seed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("init", type=Path)
    parser.add_argument("train", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    parser.add_argument("--max-length", type=int, default=MAX_LENGTH)
    parser.add_argument("--lr", type=float, default=LR)
    parser.add_argument("--text-column", default=TEXT_COLUMN)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    fine_tune(
        args.init,
        args.train,
        args.out,
        seed=args.seed,
        epochs=args.epochs,
        batch_size=args.batch_size,
        max_length=args.max_length,
        lr=args.lr,
        text_column=args.text_column,
    )


if __name__ == "__main__":
    main()
