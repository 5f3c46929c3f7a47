"""Seconds of a training epoch and of an audit with 1, 2 and all cores' threads.

Each measurement runs in a fresh interpreter with its intra-op threads set before any
work: for training ``torch.set_num_threads`` (what ``--threads`` / ``EPSSTAR_THREADS`` do
through :mod:`epsstar.plumbing.runtime.threads`), for the audit
:func:`epsstar.plumbing.runtime.threads.use_threads` (torch's threads and each onnxruntime
session's). Training: epsstar's DP-SGD on generated Purchase-100-like data (the setup of
``benchmarks/trainer_speed.py``: 10,240 records, 600 binary features, 100 classes, 3×100
MLP, expected batch 256, σ = 1, C = 1), the median seconds of the epochs after a warm-up
one. Audit: the whole ``epsstar.audit.audit`` call, ONNX and TorchScript exports of a
3×100 MLP on ``--records`` generated records (two thirds training, a third population; the
data and model of ``benchmarks/audit_throughput.py``), at the default batch. Every figure
is the median of ``--repeats`` runs. The one-minute load average is printed before and
after: the machine may be shared, and busy cores make every second longer.

Run:  PYTHONPATH=. python benchmarks/thread_counts.py  [--records 60000 --repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from audit_throughput import build

from epsstar.cli.common.text_table import aligned_table
from epsstar.plumbing.runtime.threads import available_cores

_TRAIN = """
import json, torch
torch.set_num_threads({threads})
from epsstar.training.data.datasets import purchase_like
from epsstar.training.data.tables import TabularData
from epsstar.training.trainer import TrainingConfig, train
data = purchase_like(10_240, seed=0)
table = TabularData(features=data.features.astype('float64'), labels=data.labels,
    feature_names=tuple(data.columns), classes=tuple(str(k) for k in range(100)),
    label_column='label', source='purchase-like')
config = TrainingConfig(epochs={epochs} + 1, batch_size=256, hidden=(100, 100, 100),
    noise_multiplier=1.0, lr=0.05, standardise_on='data')
history = train(table, config).result.history
print(json.dumps([entry.seconds for entry in history[1:]]))
"""

_AUDIT = """
import json, time
from epsstar.plumbing.runtime.threads import use_threads
use_threads({threads})
from epsstar.audit import AuditOptions, Tables, audit
start = time.perf_counter()
audit({model!r}, Tables({train!r}, {population!r}, 'label'), AuditOptions(delta=1e-6))
print(json.dumps(time.perf_counter() - start))
"""


def _child(code: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _training(threads: int, epochs: int, repeats: int) -> float:
    seconds: list[float] = []
    for _ in range(repeats):
        seconds += [float(value) for value in _child(_TRAIN.format(threads=threads, epochs=epochs))]
    return statistics.median(seconds)


def _audit(threads: int, workdir: Path, model: str, repeats: int) -> float:
    code = _AUDIT.format(
        threads=threads,
        model=str(workdir / model),
        train=str(workdir / "train.parquet"),
        population=str(workdir / "population.parquet"),
    )
    return statistics.median(float(_child(code)) for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=60_000)
    parser.add_argument("--epochs", type=int, default=2, help="timed epochs per training")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    cores = available_cores()
    counts = sorted({1, 2, cores})
    load_before = os.getloadavg()[0]
    rows = [["threads", "training s / epoch", "ONNX audit s", "TorchScript audit s"]]
    with tempfile.TemporaryDirectory() as folder:
        workdir = Path(folder)
        build(workdir, args.records, 1, 0)
        for threads in counts:
            rows.append(
                [
                    f"{threads}{' (all cores)' if threads == cores else ''}",
                    f"{_training(threads, args.epochs, args.repeats):.2f}",
                    f"{_audit(threads, workdir, 'model.onnx', args.repeats):.2f}",
                    f"{_audit(threads, workdir, 'model.pt', args.repeats):.2f}",
                ]
            )
    load_after = os.getloadavg()[0]
    print(
        f"{cores} cores available; {args.records:,} audited records; median of "
        f"{args.repeats} runs; load average {load_before:.2f} before, {load_after:.2f} after\n"
    )
    print(aligned_table(rows, left_columns=1))


if __name__ == "__main__":
    main()
