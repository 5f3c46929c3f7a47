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
column prints the ratio. Below the table, the CPU seconds each side spends importing the
modules it imported while its clock ran (imported again in that order in a fresh
process): a fixed cost, the same for any number of rows, that the audit's statistics
libraries (scipy, scikit-learn, pandas) add to the floor.

    python benchmarks/audit_throughput.py               # 300,000 records
    python benchmarks/audit_throughput.py --records 60000
    python benchmarks/audit_throughput.py --batch-sizes 16384 --data /tmp/purchase

``--data DIR`` keeps the tables and the model in DIR and reads them from there on the next
run (built only when DIR holds no ``model.onnx``), so that runs of two versions of epsstar,
alternated, audit the same files.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from epsstar.audit.data.reading import DEFAULT_BATCH_SIZE
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


def _child(code: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, check=True
    )
    measured: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return measured


def audit_in_child(workdir: Path, model: str, batch_size: int, threads: int) -> dict[str, Any]:
    """Run one audit in a fresh interpreter so its peak memory is its own."""
    return _audit_child(workdir, model, batch_size, threads, "None")


def audit_without_baseline(
    workdir: Path, model: str, batch_size: int, threads: int
) -> dict[str, Any]:
    """The same audit with the blind baseline skipped (its cost is held to its own goal)."""
    return _audit_child(workdir, model, batch_size, threads, "'measured apart'")


def _audit_child(
    workdir: Path, model: str, batch_size: int, threads: int, skip: str
) -> dict[str, Any]:
    code = (
        "import json, time\n"
        "from epsstar.audit import AuditOptions, Tables, audit\n"
        "from epsstar.audit.premise.settings import PremiseSettings\n"
        "from epsstar.plumbing.runtime.threads import use_threads\n"
        f"use_threads({threads})\n"
        "start, cpu = time.perf_counter(), time.process_time()\n"
        "loaded = list(__import__('sys').modules)\n"
        f"r = audit({str(workdir / model)!r}, Tables({str(workdir / 'train.parquet')!r}, "
        f"{str(workdir / 'population.parquet')!r}, 'label', batch_size={batch_size}), "
        f"AuditOptions(delta=1e-6), premise=PremiseSettings(skip_blind_baseline={skip}))\n"
        "seconds, cpu = time.perf_counter() - start, time.process_time() - cpu\n"
        "status = open('/proc/self/status').read().splitlines()\n"
        "peak = [int(l.split()[1]) for l in status if l.startswith('VmHWM')][0] / 1024\n"
        "print(json.dumps({'seconds': seconds, 'cpu': cpu, 'peak_mib': peak,"
        " 'timing': r.provenance.seconds.to_dict(),"
        " 'eps': r.epsilon_star, 'acc': r.utility['population'].accuracy,"
        " 'rows': r.epsilon.n_train + r.epsilon.n_population,"
        " 'loaded': loaded, 'modules': list(__import__('sys').modules)}))\n"
    )
    return _child(code)


def inference_in_child(workdir: Path, model: str, batch_size: int, threads: int) -> dict[str, Any]:
    """Seconds to load the model, read both tables and run the model on every record with
    its own runtime (onnxruntime, torch), nothing of epsstar's: the floor an audit is held to.
    """
    if model.endswith(".onnx"):
        runtime = (
            "import onnxruntime as ort\n"
            f"options = ort.SessionOptions(); options.intra_op_num_threads = {threads}\n"
            "options.inter_op_num_threads = 1\n"
            f"session = ort.InferenceSession({str(workdir / model)!r}, options,"
            " providers=['CPUExecutionProvider'])\n"
            "name = session.get_inputs()[0].name\n"
            "run = lambda x: session.run(None, {name: x})\n"
        )
    else:
        runtime = (
            "import torch\n"
            f"torch.set_num_threads({threads})\n"
            f"module = torch.jit.load({str(workdir / model)!r}).eval()\n"
            "def run(x):\n"
            "    with torch.inference_mode():\n"
            "        return module(torch.from_numpy(x)).numpy()\n"
        )
    code = (
        "import json, time, numpy as np, pyarrow.parquet as pq\n"
        "start, cpu = time.perf_counter(), time.process_time()\n"
        "loaded = list(__import__('sys').modules)\n"
        + runtime
        + "for name_ in ('train', 'population'):\n"
        f"    table = pq.ParquetFile({str(workdir)!r} + f'/{{name_}}.parquet')\n"
        "    columns = [c for c in table.schema_arrow.names if c != 'label']\n"
        f"    for batch in table.iter_batches(batch_size={batch_size}, columns=columns,"
        " use_threads=False):\n"
        "        x = np.stack([c.to_numpy() for c in batch.columns], axis=1)\n"
        "        run(x.astype(np.float32))\n"
        "print(json.dumps({'seconds': time.perf_counter() - start,"
        " 'cpu': time.process_time() - cpu, 'loaded': loaded,"
        " 'modules': list(__import__('sys').modules)}))\n"
    )
    return _child(code)


def imports_in_child(measured: dict[str, Any]) -> float:
    """CPU seconds a fresh process takes to import the modules a measured run imported while
    its clock ran (``modules`` less ``loaded``), in their order, after importing untimed
    those it had loaded before (``__main__`` and modules that do not import alone are
    skipped)."""
    code = (
        "import importlib, json, sys, time, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "def load(names):\n"
        "    for name in names:\n"
        "        if name in sys.modules or name == '__main__':\n"
        "            continue\n"
        "        try:\n"
        "            importlib.import_module(name)\n"
        "        except Exception:\n"
        "            pass\n"
        f"load({measured['loaded']!r})\n"
        "cpu = time.process_time()\n"
        f"load({measured['modules']!r})\n"
        "print(json.dumps({'cpu': time.process_time() - cpu}))\n"
    )
    return float(_child(code)["cpu"])


def _best(
    measure: Callable[[Path, str, int, int], dict[str, Any]],
    arguments: tuple[Path, str, int, int],
    repeats: int,
) -> dict[str, Any]:
    """The repeat with the least CPU time: the one other programs disturbed least."""
    return min((measure(*arguments) for _ in range(repeats)), key=lambda m: float(m["cpu"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[65_536, 16_384, 4_096])
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads, both sides (1)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each; the least CPU kept")
    parser.add_argument("--data", type=Path, help="keep (or reuse) the tables and the model here")
    args = parser.parse_args()
    print(
        f"Python {platform.python_version()}, {platform.machine()}, records={args.records:,}, "
        f"{args.threads} intra-op thread(s), best of {args.repeats}"
    )
    ratios: dict[str, float] = {}
    imports: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.data or Path(tmp)
        if (workdir / "model.onnx").exists():
            print(f"data + model read from {workdir}\n")
        else:
            workdir.mkdir(parents=True, exist_ok=True)
            start = time.perf_counter()
            build(workdir, args.records, args.epochs, args.seed)
            print(f"data + model built in {time.perf_counter() - start:.0f} s\n")
        rows = [list(HEADER)]
        runs = [
            (label, model, batch)
            for batch in args.batch_sizes
            for label, model in (("ONNX", "model.onnx"), ("TorchScript", "model.pt"))
        ]
        for label, model, batch in runs:
            arguments = (workdir, model, batch, args.threads)
            m = _best(audit_in_child, arguments, args.repeats)
            without = float(_best(audit_without_baseline, arguments, args.repeats)["cpu"])
            alone = _best(inference_in_child, arguments, args.repeats)
            timing, cpu, floor = m["timing"], float(m["cpu"]), float(alone["cpu"])
            rows.append(
                [
                    label,
                    f"{batch:,}",
                    f"{m['rows']:,}",
                    f"{m['seconds']:.1f}",
                    f"{cpu:.1f}",
                    f"{timing['inference']:.1f}",
                    f"{without:.1f}",
                    f"{timing['statistics']:.1f}",
                    f"{timing['utility']:.1f}",
                    f"{m['peak_mib']:.0f}",
                    f"{m['eps']:.3f}",
                    f"{m['acc']:.3f}",
                    f"{floor:.1f}",
                    f"{without / floor:.2f}x",
                    f"{cpu / floor:.2f}x",
                ]
            )
            if batch == DEFAULT_BATCH_SIZE:
                ratios[label] = cpu / floor
                imports[label] = (
                    min(imports_in_child(m) for _ in range(args.repeats)),
                    min(imports_in_child(alone) for _ in range(args.repeats)),
                )
        print(aligned_table(rows))
        for label, (audit_imports, alone_imports) in imports.items():
            print(
                f"{label} imports: audit {audit_imports:.2f} CPU s, inference alone "
                f"{alone_imports:.2f} CPU s (best of {args.repeats}; included in both columns "
                "above)"
            )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\n(benchmark process peak RSS {peak:.0f} MiB)")
    if ratios:
        worst = max(ratios.values())
        each = ", ".join(f"{label} {ratio:.2f}x" for label, ratio in ratios.items())
        print(
            f"audit / inference alone: {worst:.2f}× ({each}; CPU seconds at the default batch "
            f"of {DEFAULT_BATCH_SIZE:,}, the blind baseline included)"
        )


HEADER = (
    "format",
    "batch",
    "rows",
    "audit s",
    "audit CPU s",
    "streaming s",
    "CPU s w/o baseline",
    "statistics s",
    "utility s",
    "peak RSS MiB",
    "eps*",
    "accuracy",
    "alone CPU s",
    "audit w/o baseline / alone",
    "audit / alone",
)


if __name__ == "__main__":
    main()
