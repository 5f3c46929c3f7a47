"""A LiRA/RMIA audit with K reference models, against K + 1 times inference alone.

Builds the data and the ONNX model of ``benchmarks/audit_throughput.py`` (Purchase-100-like
records, 600 binary features, 100 classes, split 2:1 into training and population Parquet
files; the paper's 3×100 MLP) and exports K reference models of the same architecture, their
weights drawn with seeds 1 … K and left untrained (they cost what trained models of that
architecture cost to run; their statistics are not the point here). In fresh processes of one
run it measures:

* **inference alone**: loading one model with its own runtime, reading both tables and
  predicting every record, nothing of epsstar's (``audit_throughput.inference_in_child``);
* **the audit**: ``audit(..., attack=AttackSettings(("lira", "rmia"), references))``, the
  target and the K references scored on one read of each table
  (``epsstar.audit.engines.one_pass``).

The goal is an audit with K references of at most (K + 1) × inference alone + 10 %;
the last line prints the ratio of the audit to (K + 1) × inference alone. As in
``audit_throughput.py``, both sides run on ``--threads`` intra-op threads (1) and are compared
in CPU seconds (``time.process_time``, the least of ``--repeats`` runs), which other programs
on the machine disturb far less than wall time.

    PYTHONPATH=. python benchmarks/reference_throughput.py                  # 100,000 records, K = 4
    PYTHONPATH=. python benchmarks/reference_throughput.py --records 300000 --references 8
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from audit_throughput import build, inference_in_child

MODEL = "model.onnx"


def export_references(workdir: Path, k: int) -> None:
    """K untrained 3×100 MLPs (seeds 1 … K) on the training table's standardiser, as ONNX."""
    import numpy as np
    import pyarrow.parquet as pq
    import torch

    from epsstar.training.models import MLP, ExportedModel, Standardiser
    from epsstar.training.runs.export import export_onnx

    table = pq.read_table(workdir / "train.parquet")
    columns = [name for name in table.column_names if name != "label"]
    features = np.column_stack([table[name].to_numpy() for name in columns]).astype(np.float64)
    standardiser = Standardiser.fit(features, torch.float32)
    for index in range(k):
        generator = torch.Generator().manual_seed(index + 1)
        network = MLP(features.shape[1], 100, (100, 100, 100), generator=generator)
        model = ExportedModel(standardiser, network, binary=False).eval()
        export_onnx(model, workdir / f"reference-{index}.onnx")


def audit_in_child(workdir: Path, references: int, batch_size: int, threads: int) -> float:
    """CPU seconds of one audit with ``references`` reference models, in a fresh process."""
    paths = [str(workdir / f"reference-{k}.onnx") for k in range(references)]
    code = (
        "import time\n"
        "from epsstar.audit import AuditOptions, Tables, audit\n"
        "from epsstar.audit.attacks.scoring import AttackSettings\n"
        "from epsstar.plumbing.runtime.threads import use_threads\n"
        f"use_threads({threads})\n"
        "start = time.process_time()\n"
        f"audit({str(workdir / MODEL)!r}, Tables({str(workdir / 'train.parquet')!r}, "
        f"{str(workdir / 'population.parquet')!r}, 'label', batch_size={batch_size}), "
        f"AuditOptions(delta=1e-6), attack=AttackSettings(('lira', 'rmia'), {paths!r}))\n"
        "print(time.process_time() - start)\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"the audit failed: {done.stderr.strip().splitlines()[-1]}")
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--references", type=int, default=4, metavar="K")
    parser.add_argument("--batch-size", type=int, default=16_384)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads, both sides (1)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each; the least CPU kept")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = parser.parse_args()
    k = args.references
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        start = time.perf_counter()
        build(workdir, args.records, args.epochs, args.seed)
        export_references(workdir, k)
        print(
            f"{args.records:,} records, K = {k}, batch {args.batch_size:,}; "
            "data and models built in "
            f"{time.perf_counter() - start:.0f} s"
        )
        measure = (workdir, MODEL, args.batch_size, args.threads)
        alone = min(float(inference_in_child(*measure)["cpu"]) for _ in range(args.repeats))
        after = min(
            audit_in_child(workdir, k, args.batch_size, args.threads) for _ in range(args.repeats)
        )
    floor = (k + 1) * alone
    rows = [
        ("inference alone, one model", alone),
        (f"(K + 1) × inference alone, K = {k}", floor),
        (f"audit with {k} references (one read per table)", after),
    ]
    print(f"CPU seconds, {args.threads} intra-op thread(s), best of {args.repeats}")
    print("| measured | CPU s | ÷ (K + 1) × alone |")
    print("|---|---:|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.1f} | {seconds / floor:.2f} |")
    if args.json:
        print(json.dumps({"alone": alone, "audit": after, "k": k}))
    print(f"audit with K references / (K + 1) × inference alone: {after / floor:.2f}×")


if __name__ == "__main__":
    main()
