"""The dask engine against the single-process one: one large audit and a fleet of audits.

1. For each population size (default 1,000,000 and 10,000,000 rows) writes the population
   (the 8 features of the binary fixtures, resampled with jitter, as in
   ``audit_memory.py``) once as one Parquet file and once as 20 Parquet partitions, and
   audits ``fixtures/models/binary_logreg.onnx`` against it (training data: the fixture's
   600 rows), each in a fresh process: with the single-process engine on the file, and with
   ``--engine dask`` on a local cluster of 2 single-threaded workers on the partitions.
   Prints ε* of both, the wall time, the rows per second, the peak resident memory of the
   auditing process (the client, which also runs the local scheduler) and of the busiest
   worker.
2. Streams one partition of the largest population through the model in a fresh process,
   as a worker does (``epsstar.audit.engines.dask_audit.stream_partition``): rows per second per
   worker thread and the peak memory, the figures docs/scale.md scales by.
3. Audits the same rows in one process keeping every loss (``EXACT_ROWS`` raised above the
   rows), and compares Epsilon* (tails-tested, tails, empirical) and the held-out lower
   bound at δ = 1e-6 from the summaries both engines use with the estimates from every
   loss: with the summaries' halves (each sketch holding every value), which isolates
   the summaries' error, and with the halves shuffled as for data held whole.
4. Audits a fleet of 20 small models (the fixtures' binary ONNX models, alternately)
   with ``audit-many --jobs 2`` and with ``audit-many --engine dask`` (2 local workers).

    python benchmarks/dask_scale.py
    python benchmarks/dask_scale.py --rows 1000000 --fleet 6
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "fixtures" / "models"
MODEL = MODELS / "binary_logreg.onnx"
PARTITIONS = 20

PEAK = (
    "def peak():\n"
    "    status = open('/proc/self/status').read().splitlines()\n"
    "    return [int(l.split()[1]) for l in status if l.startswith('VmHWM')][0] / 1024\n"
)

SINGLE = PEAK + (
    "import json, sys, time\n"
    "from epsstar.audit import AuditOptions, Tables, audit\n"
    "start = time.perf_counter()\n"
    "r = audit(sys.argv[1], Tables(sys.argv[2], sys.argv[3], 'label'), AuditOptions(delta=1e-6))\n"
    "seconds = time.perf_counter() - start\n"
    "print(json.dumps({'seconds': seconds, 'client_mib': peak(), 'worker_mib': None,\n"
    "                  'eps': r.epsilon_star, 'rows': r.epsilon.n_population}))\n"
)

DASK = PEAK + (
    "import json, logging, sys, time\n"
    "from distributed import Client, LocalCluster\n"
    "from epsstar.audit.engines.dask_engine import Engine\n"
    "from epsstar.audit import AuditOptions, Tables, audit\n"
    "cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=':0',\n"
    "                       silence_logs=logging.ERROR)\n"
    "client = Client(cluster)\n"
    "start = time.perf_counter()\n"
    "r = audit(sys.argv[1], Tables(sys.argv[2], sys.argv[3], 'label'), AuditOptions(delta=1e-6),\n"
    "          engine=Engine('dask', cluster.scheduler_address))\n"
    "seconds = time.perf_counter() - start\n"
    "workers = client.run(peak)\n"
    "client_mib = peak()\n"
    "summary = r.summaries.get('population')\n"
    "print(json.dumps({'seconds': seconds, 'client_mib': client_mib,\n"
    "                  'worker_mib': max(workers.values()),\n"
    "                  'summary_kib': None if summary is None else summary.nbytes / 1024,\n"
    "                  'eps': r.epsilon_star, 'rows': r.epsilon.n_population}))\n"
    "client.close(); cluster.close()\n"
)

PARTITION = PEAK + (
    "import json, sys, time\n"
    "from pathlib import Path\n"
    "from epsstar.audit.data.files import digests_of\n"
    "from epsstar.audit.data.reading import TableRead\n"
    "from epsstar.audit.engines.dask_audit import stream_partition\n"
    "from epsstar.audit.engines.worker_models import ModelSpec\n"
    "from epsstar.audit.model.loading import ModelFile\n"
    "model = ModelSpec(ModelFile.of(sys.argv[1]), digests_of([sys.argv[1]]))\n"
    "read = TableRead(Path(sys.argv[2]), 'population', 'label', batch_size=16384)\n"
    "start = time.perf_counter()\n"
    "table, _, _, _ = stream_partition(model, sys.argv[2], {}, read)\n"
    "seconds = time.perf_counter() - start\n"
    "print(json.dumps({'seconds': seconds, 'rows': table.rows, 'mib': peak()}))\n"
)


EXACT = (
    "import dataclasses, json, sys\n"
    "import epsstar.audit.data.summary_plans as summaries\n"
    "from epsstar.audit import AuditOptions, Tables, audit\n"
    "from epsstar.statistics.estimators.estimator import estimate_at_deltas\n"
    "from epsstar.statistics.bounds.held_out_bound import split_lower_bound\n"
    "from epsstar.statistics.summaries.loss_summary import summarise_losses\n"
    "from epsstar.statistics.estimators.methods import method_config\n"
    "limit, summaries.EXACT_ROWS = summaries.EXACT_ROWS, 10**15\n"
    "r = audit(sys.argv[1], Tables(sys.argv[2], sys.argv[3], 'label'), AuditOptions(delta=1e-6))\n"
    "summaries.EXACT_ROWS = limit\n"
    "t, p = r.train_losses, r.population_losses\n"
    "plans = summaries.SummaryPlans.for_rows(t.size, p.size, seed=0)\n"
    "def side(x, plan, whole):\n"
    "    if plan is None: return x\n"
    "    return summarise_losses(x, dataclasses.replace(plan, k=x.size) if whole else plan)\n"
    "inputs = {'summaries': (side(t, plans.train, False), side(p, plans.population, False)),\n"
    "          'same halves': (side(t, plans.train, True), side(p, plans.population, True)),\n"
    "          'shuffled halves': (t, p)}\n"
    "out = {}\n"
    "for m in ('tails-tested', 'tails', 'empirical'):\n"
    "    out[m] = {k: estimate_at_deltas(a, b, method_config(m), (1e-6,), seed=0)[0].epsilon\n"
    "              for k, (a, b) in inputs.items()}\n"
    "out['lower bound'] = {k: split_lower_bound(a, b, delta=1e-6).epsilon\n"
    "                      for k, (a, b) in inputs.items()}\n"
    "from epsstar.statistics.bounds.leak_test import held_out_leak_test\n"
    "seeds = {'shuffled halves': [], 'summaries': []}\n"
    "for seed in range(10):\n"
    "    plans = summaries.SummaryPlans.for_rows(t.size, p.size, seed=seed)\n"
    "    summarised = side(p, plans.population, False)\n"
    "    for k, b in (('shuffled halves', p), ('summaries', summarised)):\n"
    "        seeds[k].append((held_out_leak_test(t, b, seed=seed).p_value,\n"
    "                         split_lower_bound(t, b, delta=1e-6, seed=seed).epsilon))\n"
    "print(json.dumps({'statistics': out, 'seeds': seeds}))\n"
)


def _run(code: str, *arguments: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", code, *arguments],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    if done.returncode != 0:
        raise SystemExit(f"a measuring process failed:\n{done.stderr.strip()}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _kib(kib: float | None) -> str:
    """A summary's size, or why there is none (a side small enough is held whole)."""
    return "held whole" if kib is None else f"{kib:,.0f}"


def write_population(folder: Path, rows: int, seed: int) -> tuple[Path, Path]:
    """The population as one file and as ``PARTITIONS`` files of the same rows, in order."""
    source = pq.read_table(MODELS / "binary_population.parquet").to_pandas()
    features = source.drop(columns=["label"]).to_numpy(dtype=np.float64)
    labels = source["label"].to_numpy()
    rng = np.random.default_rng(seed)
    single, parts = folder / "population.parquet", folder / "population"
    parts.mkdir()
    writer = None
    try:
        for index, block_rows in enumerate(np.array_split(np.arange(rows), PARTITIONS)):
            size = len(block_rows)
            pick = rng.integers(0, len(labels), size)
            block = features[pick] + rng.normal(scale=0.05, size=(size, features.shape[1]))
            columns = {name: block[:, i] for i, name in enumerate(source.columns[:-1])}
            columns["label"] = labels[pick]
            table = pa.table(columns)
            if writer is None:
                writer = pq.ParquetWriter(single, table.schema)
            writer.write_table(table)
            pq.write_table(table, parts / f"part.{index}.parquet")
    finally:
        if writer is not None:
            writer.close()
    return single, parts


def _manifest(folder: Path, size: int) -> Path:
    models = [MODELS / "binary_logreg.onnx", MODELS / "binary_mlp.onnx"]
    lines = ["model,train,population,label_column,strategy,repeat"]
    for repeat in range(size):
        model = models[repeat % 2]
        lines.append(
            f"{model},{MODELS / 'binary_train.csv'},{MODELS / 'binary_population.parquet'},"
            f"label,{model.stem},{repeat}"
        )
    path = folder / "fleet.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def _fleet(manifest: Path, engine: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-W",
            "ignore",
            "-m",
            "epsstar.cli",
            "audit-many",
            str(manifest),
            "--quiet",
            *engine,
        ],
        capture_output=True,
        check=True,
        cwd=ROOT,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--fleet", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    train = str(MODELS / "binary_train.parquet")
    results = []
    per_partition: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rows in args.rows:
            folder = Path(tmp) / str(rows)
            folder.mkdir()
            single, parts = write_population(folder, rows, args.seed)
            one = _run(SINGLE, str(MODEL), train, str(single))
            many = _run(DASK, str(MODEL), train, str(parts))
            exact = _run(EXACT, str(MODEL), train, str(single))
            results.append((rows, one, many, exact))
            if rows == max(args.rows):
                per_partition = _run(PARTITION, str(MODEL), str(parts / "part.0.parquet"))
            single.unlink()
        manifest = _manifest(Path(tmp), args.fleet)
        fleet_jobs = _fleet(manifest, ["--jobs", "2"])
        fleet_dask = _fleet(manifest, ["--engine", "dask", "--jobs", "2"])

    print(
        f"\nOne audit, population in {PARTITIONS} Parquet partitions (dask: LocalCluster of "
        f"2 single-threaded workers)\n"
    )
    print(
        "| population rows | engine | eps* | wall s | rows/s | client peak MiB "
        "| worker peak MiB | |eps* - single| | throughput vs single |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for rows, one, many, _ in results:
        for name, m in (("single", one), ("dask", many)):
            rate = (m["rows"] + 600) / m["seconds"]
            worker = "-" if m["worker_mib"] is None else f"{m['worker_mib']:,.0f}"
            gap = abs(m["eps"] - one["eps"])
            ratio = one["seconds"] / m["seconds"]
            print(
                f"| {rows:,} | {name} | {m['eps']:.4f} | {m['seconds']:.1f} | {rate:,.0f} "
                f"| {m['client_mib']:,.0f} | {worker} | {gap:.1e} | {ratio:.2f} |"
            )
    print(
        "\nEpsilon* at delta = 1e-6 from the summaries (population side; training side held "
        "whole) and from every loss\n"
    )
    print(
        "| population rows | statistic | from summaries | every loss, same halves "
        "| difference | every loss, shuffled halves | summary KiB | losses MiB |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for rows, _, many, exact in results:
        for statistic, found in exact["statistics"].items():
            summarised, same = found["summaries"], found["same halves"]
            print(
                f"| {rows:,} | {statistic} | {summarised:.4f} | {same:.4f} "
                f"| {abs(summarised - same):.1e} | {found['shuffled halves']:.4f} "
                f"| {_kib(many['summary_kib'])} | {rows * 8 / 2**20:,.0f} |"
            )
    print("\nThe held-out leak test and lower bound in seeds 0-9 (each seed its own halves)\n")
    print("| population rows | halves | leak found (p < 0.05) | mean lower bound |")
    print("|---:|---|---:|---:|")
    for rows, _, _, exact in results:
        for halves, found in exact["seeds"].items():
            leaks = sum(p_value < 0.05 for p_value, _ in found)
            mean = sum(bound for _, bound in found) / len(found)
            print(f"| {rows:,} | {halves} | {leaks} of {len(found)} | {mean:.3f} |")
    p = per_partition
    print(
        f"\nOne partition on one worker thread: {p['rows']:,} rows in {p['seconds']:.2f} s "
        f"({p['rows'] / p['seconds']:,.0f} rows/s), peak {p['mib']:,.0f} MiB\n"
    )
    print(f"Fleet of {args.fleet} small models (audit-many)\n")
    print("| engine | wall s | models/min |")
    print("|---|---:|---:|")
    for name, seconds in (("--jobs 2", fleet_jobs), ("--engine dask (2 workers)", fleet_dask)):
        print(f"| {name} | {seconds:.1f} | {60 * args.fleet / seconds:.1f} |")


if __name__ == "__main__":
    main()
