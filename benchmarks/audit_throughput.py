"""Throughput of a whole audit on Purchase-100-like data, per model format.

Generates a Purchase-100-like data set (600 binary features, 100 classes;
``epsstar.training.data.datasets.purchase_like``), split 2:1 into training and population
Parquet files, trains the paper's 3x100 MLP briefly, exports it to ONNX and
TorchScript, and audits each export in a fresh process. Prints rows per second
of the whole audit, the split between streaming inference (read + model +
losses), statistics (fits, goodness of fit, Epsilon*, bounds, readings) and
utility (accuracy, one-vs-rest AUROC over 100 classes), and the peak resident
memory of the audit process (VmHWM: unlike ``ru_maxrss`` it starts afresh in a
new program, not at the parent's peak).

Beside each audit, the same run measures the floor it is held to: reading both tables
and running the model on every record, nothing else (``read + inference alone``, in a
fresh process too). The target is a whole audit at most 1.25x that floor; the last
column prints the ratio.

    python benchmarks/audit_throughput.py               # 300,000 records
    python benchmarks/audit_throughput.py --records 60000
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from epsstar.cli.common.text_table import aligned_table


def build(workdir: Path, records: int, epochs: int, seed: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    import torch

    from epsstar.training.data.datasets import purchase_like
    from epsstar.training.models import MLP, ExportedModel, Standardiser
    from epsstar.training.runs.export import export_onnx, export_torchscript

    data = purchase_like(records, seed=seed)
    n_train = records * 2 // 3
    for name, rows in (("train", slice(0, n_train)), ("population", slice(n_train, records))):
        table = {c: data.features[rows, i] for i, c in enumerate(data.columns)}
        table["label"] = data.labels[rows]
        pq.write_table(pa.table(table), workdir / f"{name}.parquet")

    torch.manual_seed(seed)
    features = torch.as_tensor(data.features[:n_train], dtype=torch.float32)
    labels = torch.as_tensor(data.labels[:n_train])
    standardiser = Standardiser.fit(data.features[:n_train].astype(np.float64), torch.float32)
    network = MLP(
        features.shape[1], 100, (100, 100, 100), generator=torch.Generator().manual_seed(seed)
    )
    optimiser = torch.optim.Adam(network.parameters(), lr=1e-3)
    for _ in range(epochs):
        for batch in torch.split(torch.randperm(n_train), 512):
            optimiser.zero_grad()
            loss = torch.nn.functional.cross_entropy(
                network(standardiser(features[batch])), labels[batch]
            )
            torch.autograd.backward(loss)
            optimiser.step()
    model = ExportedModel(standardiser, network, binary=False).eval()
    export_onnx(model, workdir / "model.onnx")
    export_torchscript(model, workdir / "model.pt")


def audit_in_child(workdir: Path, model: str, batch_size: int) -> dict[str, Any]:
    """Run one audit in a fresh interpreter so its peak memory is its own."""
    code = (
        "import json, resource, time, sys\n"
        "from epsstar.audit import AuditOptions, Tables, audit\n"
        "start = time.perf_counter()\n"
        f"r = audit({str(workdir / model)!r}, Tables({str(workdir / 'train.parquet')!r}, "
        f"{str(workdir / 'population.parquet')!r}, 'label', batch_size={batch_size}), "
        "AuditOptions(delta=1e-6))\n"
        "seconds = time.perf_counter() - start\n"
        "status = open('/proc/self/status').read().splitlines()\n"
        "peak = [int(l.split()[1]) for l in status if l.startswith('VmHWM')][0] / 1024\n"
        "print(json.dumps({'seconds': seconds, 'peak_mib': peak,"
        " 'timing': r.provenance.seconds.to_dict(),"
        " 'eps': r.epsilon_star, 'acc': r.utility['population'].accuracy,"
        " 'rows': r.epsilon.n_train + r.epsilon.n_population}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, check=True
    )
    measured: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return measured


def inference_in_child(workdir: Path, model: str, batch_size: int) -> float:
    """Seconds to load the model, read both tables and predict every record, alone."""
    code = (
        "import time, numpy as np, pyarrow.parquet as pq\n"
        "from pathlib import Path\n"
        "from epsstar.audit.model.plugins import loader_for_path\n"
        "start = time.perf_counter()\n"
        f"path = Path({str(workdir / model)!r})\n"
        "loader, _ = loader_for_path(path)\n"
        "m = loader.load(path)\n"
        "for name in ('train', 'population'):\n"
        f"    table = pq.ParquetFile(Path({str(workdir)!r}) / f'{{name}}.parquet')\n"
        "    columns = [c for c in table.schema_arrow.names if c != 'label']\n"
        f"    for batch in table.iter_batches(batch_size={batch_size}, columns=columns):\n"
        "        m.predict(np.column_stack([c.to_numpy() for c in batch.columns]))\n"
        "print(time.perf_counter() - start)\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, check=True
    )
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[65_536, 16_384, 4_096])
    args = parser.parse_args()
    print(f"Python {platform.python_version()}, {platform.machine()}, records={args.records:,}")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        start = time.perf_counter()
        build(workdir, args.records, args.epochs, args.seed)
        print(f"data + model built in {time.perf_counter() - start:.0f} s\n")
        header = [
            "format",
            "batch",
            "rows",
            "total s",
            "rows/s",
            "inference s",
            "statistics s",
            "utility s",
            "peak RSS MiB",
            "eps*",
            "accuracy",
            "read + inference alone s",
            "whole audit / alone",
        ]
        rows = [header]
        runs = [
            (label, model, batch)
            for batch in args.batch_sizes
            for label, model in (("ONNX", "model.onnx"), ("TorchScript", "model.pt"))
        ]
        for label, model, batch in runs:
            m: dict[str, Any] = audit_in_child(workdir, model, batch)
            timing, total = m["timing"], float(m["seconds"])
            alone = inference_in_child(workdir, model, batch)
            rows.append(
                [
                    label,
                    f"{batch:,}",
                    f"{m['rows']:,}",
                    f"{total:.1f}",
                    f"{m['rows'] / total:,.0f}",
                    f"{timing['inference']:.1f}",
                    f"{timing['statistics']:.1f}",
                    f"{timing['utility']:.1f}",
                    f"{m['peak_mib']:.0f}",
                    f"{m['eps']:.3f}",
                    f"{m['acc']:.3f}",
                    f"{alone:.1f}",
                    f"{total / alone:.2f}x",
                ]
            )
        print(aligned_table(rows))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\n(benchmark process peak RSS {peak:.0f} MiB)")


if __name__ == "__main__":
    main()
