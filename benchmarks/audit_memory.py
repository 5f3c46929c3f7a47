"""Peak memory of an audit whose population file has 10 million rows.

Writes a Parquet population file of ``--rows`` records (default 10,000,000) with the
8 numeric features of the binary fixtures (``fixtures/models/binary_*``), drawn
from the same distribution, and audits ``fixtures/models/binary_logreg.onnx``
against it in a fresh process. Prints the audit's wall time and its peak
resident memory (VmHWM) next to the size of the population data in memory.

    python benchmarks/audit_memory.py
    python benchmarks/audit_memory.py --rows 2000000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "fixtures" / "models"


def write_population(path: Path, rows: int, seed: int) -> None:
    """Rows resampled from the fixture population with small jitter, in row groups."""
    source = pq.read_table(MODELS / "binary_population.parquet").to_pandas()
    features = source.drop(columns=["label"]).to_numpy(dtype=np.float64)
    labels = source["label"].to_numpy()
    rng = np.random.default_rng(seed)
    schema = None
    writer = None
    try:
        for start in range(0, rows, 1_000_000):
            size = min(1_000_000, rows - start)
            pick = rng.integers(0, len(labels), size)
            block = features[pick] + rng.normal(scale=0.05, size=(size, features.shape[1]))
            columns = {name: block[:, i] for i, name in enumerate(source.columns[:-1])}
            columns["label"] = labels[pick]
            table = pa.table(columns)
            if writer is None:
                schema = table.schema
                writer = pq.ParquetWriter(path, schema)
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        population = Path(tmp) / "population.parquet"
        start = time.perf_counter()
        write_population(population, args.rows, args.seed)
        print(
            f"wrote {args.rows:,} rows in {time.perf_counter() - start:.0f} s "
            f"({population.stat().st_size / 2**20:.0f} MiB on disk)"
        )
        code = (
            "import json, time\n"
            "from epsstar.audit import AuditOptions, Tables, audit\n"
            "start = time.perf_counter()\n"
            f"r = audit({str(MODELS / 'binary_logreg.onnx')!r}, "
            f"Tables({str(MODELS / 'binary_train.parquet')!r}, {str(population)!r}, 'label'), "
            "AuditOptions(delta=1e-6))\n"
            "seconds = time.perf_counter() - start\n"
            "status = open('/proc/self/status').read().splitlines()\n"
            "peak = [int(l.split()[1]) for l in status if l.startswith('VmHWM')][0] / 1024\n"
            "print(json.dumps({'seconds': seconds, 'peak_mib': peak, "
            "'timing': r.provenance.seconds.to_dict(), 'eps': r.epsilon_star, "
            "'n_population': r.epsilon.n_population}))\n"
        )
        done = subprocess.run(
            [sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, check=True
        )
        m = json.loads(done.stdout.strip().splitlines()[-1])
    in_memory = args.rows * 9 * 8 / 2**20
    print(
        f"\n{'population rows':>16}  {'audit s':>8}  {'inference s':>11}  {'statistics s':>12}  "
        f"{'peak RSS MiB':>12}  {'data as float64 MiB':>19}  {'eps*':>6}"
    )
    print(
        f"{m['n_population']:>16,}  {m['seconds']:>8.1f}  {m['timing']['inference']:>11.1f}  "
        f"{m['timing']['statistics']:>12.1f}  {m['peak_mib']:>12.0f}  {in_memory:>19.0f}  "
        f"{m['eps']:>6.3f}"
    )


if __name__ == "__main__":
    main()
