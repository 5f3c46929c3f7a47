"""Where the processor time of epsstar's text scoring goes, part by part.

Builds the same model and records as ``benchmarks/text_throughput.py`` (``--size``,
``--records``), scores both files with the loss attack's plan once as a warm-up and then
``--repeats`` times, and adds up the processor seconds spent in each part by wrapping the
functions that do it: tokenising (``tokenize``), the transformer body and the output layer
(forward calls of the model's ``transformer`` and ``lm_head``), the log-softmax, gather and
argmax (``_chunked``), the rest of ``score_tokens`` (masks, float64 copies), windows and
batches (the rest of ``_run``), the per-record statistics and zlib (the rest of
``_score_chunk``) and reading the files (the rest). Also the padded tokens and model calls
of one pass, and the processor time of one model call on two tokens (a call's fixed cost).

    python benchmarks/text_profile.py --size small --records 300 --repeats 3
"""

from __future__ import annotations

import argparse
import collections
import functools
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from text_throughput import ROLES, SIZES, build, epsstar_pass

from epsstar.audit.engines import text_scoring
from epsstar.audit.model.loading import ModelFile
from epsstar.audit.model.text_model import text_model_of
from epsstar.loaders.huggingface import model as huggingface_model

SPENT: collections.defaultdict[str, float] = collections.defaultdict(float)


def timing(owner: Any, name: str, label: str) -> None:
    """Replace ``owner.name`` by a function that adds its processor time to ``SPENT[label]``."""
    found = getattr(owner, name)

    @functools.wraps(found)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        result = found(*args, **kwargs)
        SPENT[label] += time.process_time() - start
        return result

    setattr(owner, name, timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--records", type=int, default=300, help="records per side")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="epsstar-text-profile-") as name:
        folder = Path(name)
        build(folder, SIZES[args.size], args.records, args.seed)
        loaded = ModelFile(folder / "model").load()
        model = text_model_of(loaded.model, loaded.loader.name)
        network: Any = getattr(model, "_model")  # noqa: B009  # the transformers model inside
        timing(network.transformer, "forward", "body")
        timing(network.lm_head, "forward", "head")
        language_model = huggingface_model.CausalLanguageModel
        timing(language_model, "_chunked", "chunked")
        timing(language_model, "score_tokens", "score_tokens")
        timing(language_model, "tokenize", "tokenize")
        timing(text_scoring, "_run", "run")
        timing(text_scoring, "_score_chunk", "score_chunk")
        batches = text_scoring._batches

        def counted(pieces: Any, batch_size: int) -> Iterator[Any]:
            for batch in batches(pieces, batch_size):
                SPENT["padded tokens"] += len(batch) * (batch[0].end - batch[0].start)
                SPENT["calls"] += 1
                yield batch

        setattr(text_scoring, "_batches", counted)  # noqa: B010
        plan = text_scoring.ScoringPlan(args.batch_size)
        epsstar_pass(model, folder, plan)
        SPENT.clear()
        start = time.process_time()
        for _ in range(args.repeats):
            epsstar_pass(model, folder, plan)
        total = (time.process_time() - start) / args.repeats
        spent = {key: value / args.repeats for key, value in SPENT.items()}
        parts = [
            ("reading the JSON Lines files", total - spent["score_chunk"]),
            ("tokenising", spent["tokenize"]),
            ("transformer body", spent["body"]),
            ("output layer (logits)", spent["head"]),
            ("log-softmax, gather, argmax", spent["chunked"]),
            (
                "masks, float64 copies",
                spent["score_tokens"] - spent["body"] - spent["head"] - spent["chunked"],
            ),
            ("windows, batches", spent["run"] - spent["score_tokens"]),
            (
                "per-record statistics, zlib",
                spent["score_chunk"] - spent["run"] - spent["tokenize"],
            ),
            ("total", total),
        ]
        print(f"{' and '.join(ROLES)}, {args.records} records each, mean of {args.repeats} passes")
        for label, seconds in parts:
            print(f"{label:30s} {seconds:6.2f} CPU s {100 * seconds / total:4.0f} %")
        print(f"padded tokens {spent['padded tokens']:,.0f} in {spent['calls']:.0f} model calls")
        two = torch.zeros((1, 2), dtype=torch.long)
        with torch.inference_mode():
            network(input_ids=two, use_cache=False)
            start = time.process_time()
            for _ in range(100):
                network(input_ids=two, use_cache=False)
        print(f"one model call on 2 tokens: {(time.process_time() - start) * 10:.1f} ms")


if __name__ == "__main__":
    main()
