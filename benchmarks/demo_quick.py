"""Wall time of ``epsstar demo --quick``, run as a user runs it, several times in a row.

Each run is a fresh process (``python -m epsstar demo --quick --quiet --out DIR``, its own
empty folder), so the time includes Python's start, the imports, writing the data, training
both models, auditing them and writing the reports; the load average beside each run says
how busy the machine was. The summary gives the median and the slowest run, with the
phases ``results.json`` recorded for the slowest.

Run:  PYTHONPATH=. python benchmarks/demo_quick.py  [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def one_run(folder: Path) -> tuple[float, dict[str, float]]:
    """The wall time of one quick demo into ``folder`` and its phases in ``results.json``."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "epsstar", "demo", "--quick", "--quiet", "--out", str(folder)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    seconds = time.perf_counter() - started
    phases = json.loads((folder / "results.json").read_text())["seconds"]
    return seconds, phases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    times: list[tuple[float, dict[str, float]]] = []
    with tempfile.TemporaryDirectory() as scratch:
        for run in range(args.runs):
            load = os.getloadavg()[0]
            seconds, phases = one_run(Path(scratch) / f"run-{run}")
            times.append((seconds, phases))
            print(f"run {run + 1}: {seconds:5.1f} s  (load average before it {load:.2f})")
    walls = [seconds for seconds, _ in times]
    slowest = max(times, key=lambda found: found[0])
    print(f"median {statistics.median(walls):.1f} s, slowest {slowest[0]:.1f} s")
    print("slowest run's phases (results.json):", slowest[1])


if __name__ == "__main__":
    main()
