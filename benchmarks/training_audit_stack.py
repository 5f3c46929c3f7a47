"""The many-run training audit with its runs trained together, against one run at a time.

``epsstar audit-training --runs R`` with epsstar's own DP-SGD trainer trains R runs with a
canary and R without. This audits that trainer on the UCI Adult training file (the first
30,000 records are ``--train``, the other 2,561 the population the canaries are drawn from;
108 features; the 3×100 MLP, expected batch 256, target ε = 1, C = 1, one epoch, one torch
thread; the ``input`` threat model, the ``gdp`` bound) once per value of ``--stack`` (runs
trained together; 1 is one at a time, the path before stacking), in this process, and prints
the wall time of each audit, its ratio to the one-at-a-time audit, and the largest difference
of a canary's score from that audit.

    PYTHONPATH=. python benchmarks/training_audit_stack.py               # R = 16, stacks 1, 8, 16
    PYTHONPATH=. python benchmarks/training_audit_stack.py --runs 16 --stacks 1 8
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import pandas as pd

from epsstar.audit.training_audit.audit import TrainingAuditSetup, audit_training
from epsstar.plumbing.runtime.threads import apply_threads
from epsstar.training.data import datasets
from epsstar.training.threat_models.own_trainer import OwnTrainer, parameter_count
from epsstar.training.trainer import TrainingConfig

HIDDEN = (100, 100, 100)
TRAIN_ROWS = 30_000


def _tables(folder: Path) -> tuple[Path, Path, int]:
    """``--train`` and ``--population`` as Parquet files, and the number of features."""
    adult = datasets.adult()
    names = [f"x{j}" for j in range(adult.train_features.shape[1])]
    frame = pd.DataFrame(adult.train_features, columns=names)
    frame["income"] = adult.train_labels
    train, population = folder / "train.parquet", folder / "population.parquet"
    frame.iloc[:TRAIN_ROWS].to_parquet(train, index=False)
    frame.iloc[TRAIN_ROWS:].to_parquet(population, index=False)
    return train, population, len(names)


def _audit(
    tables: tuple[Path, Path], features: int, runs: int, stack: int, work: Path
) -> tuple[float, dict[str, float]]:
    """Seconds of one audit, and the canary's score of each run (by run file)."""
    config = TrainingConfig(
        epochs=1, batch_size=256, hidden=HIDDEN, lr=0.05, clip=1.0, target_epsilon=1.0
    )
    procedure = OwnTrainer(
        config,
        "income",
        parameter_count(features, 2, HIDDEN),
        population=str(tables[1]),
        stack=stack,
    )
    setup = TrainingAuditSetup(
        *tables, "income", runs=runs, threat_models=("input",), bound="gdp", seed=0, work=work
    )
    start = time.perf_counter()
    audit_training(procedure, setup)
    seconds = time.perf_counter() - start
    scores = {
        path.name: float(json.loads(path.read_text())["scores"]["input"][0])
        for path in sorted(work.glob("run-*.json"))
    }
    return seconds, scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=16, help="R: runs per arm (default 16)")
    parser.add_argument("--stacks", type=int, nargs="+", default=[1, 8, 16])
    args = parser.parse_args()
    apply_threads(1)
    with tempfile.TemporaryDirectory(prefix="epsstar-stack-bench-") as scratch:
        folder = Path(scratch)
        train, population, features = _tables(folder)
        rows: list[tuple[int, float, dict[str, float]]] = []
        for stack in args.stacks:
            work = folder / f"work-{stack}"
            seconds, scores = _audit((train, population), features, args.runs, stack, work)
            rows.append((stack, seconds, scores))
    base_seconds, base_scores = rows[0][1], rows[0][2]
    print(f"{2 * args.runs} runs ({args.runs} with the canary, {args.runs} without), Adult")
    print("| stack | audit s | s / run | ÷ first row | largest score difference |")
    print("|---:|---:|---:|---:|---:|")
    for stack, seconds, scores in rows:
        gap = max(abs(scores[name] - base_scores[name]) for name in base_scores)
        print(
            f"| {stack} | {seconds:.1f} | {seconds / (2 * args.runs):.2f} | "
            f"{seconds / base_seconds:.2f} | {gap:.1e} |"
        )
    best = min(rows[1:] or rows, key=lambda row: row[1])
    print(f"one at a time / stacked by {best[0]}: {base_seconds / best[1]:.2f}×")


if __name__ == "__main__":
    main()
