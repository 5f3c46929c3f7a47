"""Wall time of one sweep trained with ``--workers 1`` and with more worker processes.

The grid is small and the same for every run: UCI Adult (a subsample of ``--rows``
training rows, the shipped copy), an MLP of one hidden layer, a non-private baseline and
DP-SGD to ε = 1, 3 and 10, each ``--repeats`` times (16 models by default). Each count
of ``--workers`` runs ``python -m epsstar sweep`` into a folder of its own, whole (the
processes' start included), with the torch threads it chooses; the table gives the wall
seconds, the speed-up over the first count, the CPU seconds of all its processes, and
whether every model is the first run's: the ONNX file byte for byte, the TorchScript
weights and ``training.json`` but its timings.

Run:  PYTHONPATH=. python benchmarks/sweep_workers.py  [--rows 4000 --repeats 4 --workers 1 2]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from epsstar.cli.common.text_table import aligned_table

GRID = """
data = "{train}"
label_column = "label"
population = "{population}"
repeats = {repeats}
seed = 0

[model]
hidden = [32]

[baseline]
epochs = [{epochs}]
batch_size = 64

[dp]
target_epsilons = [1, 3, 10]
batch_sizes = [64]
epochs = {epochs}
"""


def _write_grid(folder: Path, rows: int, repeats: int, epochs: int) -> Path:
    """The Adult subsample as Parquet and the sweep file that trains the grid on it."""
    from epsstar.training.data.datasets import adult

    train, population = adult().subsample(rows, rows, seed=0).write_parquet(folder / "data")
    path = folder / "sweep.toml"
    path.write_text(GRID.format(train=train, population=population, repeats=repeats, epochs=epochs))
    return path


def _sweep(config: Path, out: Path, workers: int) -> tuple[float, float]:
    """Wall and CPU seconds (of every process) of ``epsstar sweep CONFIG --out OUT --workers
    N``, as a user runs it."""
    command = [sys.executable, "-m", "epsstar", "sweep", str(config), "--out", str(out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([*command, "--workers", str(workers), "--quiet"], check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


def _record(path: Path) -> dict[str, Any]:
    """A ``training.json`` without its timings."""
    record: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    record.pop("wall_time_seconds")
    for epoch in record["history"]:
        epoch.pop("seconds")
    return record


def _weights(path: Path) -> dict[str, bytes]:
    """A TorchScript archive's tensors and extra files (its code, the class names its
    pickle holds and its serialization id depend on what the process scripted before)."""
    with zipfile.ZipFile(path) as archive:
        return {
            name.split("/", 1)[1]: archive.read(name)
            for name in archive.namelist()
            if "/data/" in name or "/extra/" in name
        }


def _json_differences(got: Any, expected: Any, at: str = "") -> list[str]:
    """Where two JSON values differ, as paths with both values. The accountant's figures
    (Bayes security, from dp_accounting's PLD) are sums whose order follows the BLAS threads
    a process runs with, so a float may differ in its last bits (relative 1e-12 allowed)."""
    if isinstance(got, dict) and isinstance(expected, dict):
        return [
            found
            for key in sorted(set(got) | set(expected))
            for found in _json_differences(got.get(key), expected.get(key), f"{at}.{key}")
        ]
    if isinstance(got, float) and isinstance(expected, float):
        same = math.isclose(got, expected, rel_tol=1e-12, abs_tol=1e-15)
    else:
        same = got == expected
    return [] if same else [f"{at}: {got!r} != {expected!r}"]


def run_differences(got: Path, expected: Path) -> list[str]:
    """How the run folder ``got`` differs from ``expected``: the ONNX file and the TorchScript
    weights bit for bit, ``training.json`` but its timings (and floats' last bits)."""
    found = []
    if (got / "model.onnx").read_bytes() != (expected / "model.onnx").read_bytes():
        found.append("model.onnx")
    if _weights(got / "model.pt") != _weights(expected / "model.pt"):
        found.append("the weights of model.pt")
    found += _json_differences(_record(got / "training.json"), _record(expected / "training.json"))
    return found


def _same_models(got: Path, expected: Path) -> tuple[int, int]:
    """How many of ``expected``'s models ``got`` holds, of how many (:func:`run_differences`)."""
    runs = sorted(p.parent.relative_to(expected) for p in expected.glob("*/*/training.json"))
    same = sum(not run_differences(got / run, expected / run) for run in runs)
    return same, len(runs)


def main() -> None:
    from epsstar.plumbing.runtime.threads import available_cores, choose_threads

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    rows = [
        ["--workers", "threads each", "load before", "wall s", "speed-up", "CPU s", "same models"]
    ]
    with tempfile.TemporaryDirectory(prefix="epsstar-bench-") as scratch:
        config = _write_grid(Path(scratch), args.rows, args.repeats, args.epochs)
        first: tuple[Path, float] | None = None
        for workers in args.workers:
            out = Path(scratch) / f"workers-{workers}"
            load = os.getloadavg()[0]
            threads = choose_threads(workers)
            seconds, cpu = _sweep(config, out, workers)
            first = first or (out, seconds)
            same, count = _same_models(out, first[0])
            rows.append(
                [
                    str(workers),
                    str(threads),
                    f"{load:.1f}",
                    f"{seconds:.1f}",
                    f"{first[1] / seconds:.2f}",
                    f"{cpu:.1f}",
                    f"{same}/{count}",
                ]
            )
    print(
        f"{available_cores()} cores; {4 * args.repeats} models (UCI Adult, {args.rows:,} rows, "
        f"hidden 32, {args.epochs} epochs)\n"
    )
    print(aligned_table(rows, left_columns=0))


if __name__ == "__main__":
    main()
