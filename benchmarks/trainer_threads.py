"""Seconds per epoch of the DP-SGD trainer with torch's default threads and with epsstar's choice.

The model is the demo's (UCI Adult, 3×100 MLP, batch 64, DP-SGD at σ = 1). Each scenario
runs ``--processes`` trainings at once (1: the machine to itself; 2: two trainings side
by side, like two sweeps or the demo's workers), first with torch's default thread count
in every process, then with :func:`epsstar.plumbing.runtime.threads.choose_threads` for that many
workers. A table gives the median seconds per epoch over the processes' epochs (after
one warm-up epoch).

Run:  PYTHONPATH=. python benchmarks/trainer_threads.py  [--epochs 3 --processes 1 2]
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics

from epsstar.cli.common.text_table import aligned_table


def _epoch_seconds(threads: int | None, epochs: int) -> list[float]:
    """Train for ``epochs`` + 1 epochs with ``threads`` (None: torch's default); the timings."""
    import numpy as np
    import torch

    from epsstar.training.data.datasets import adult
    from epsstar.training.data.tables import TabularData
    from epsstar.training.trainer import TrainingConfig, train

    if threads is not None:
        torch.set_num_threads(threads)
    source = adult()
    data = TabularData(
        features=np.asarray(source.train_features, dtype=np.float64),
        labels=np.asarray(source.train_labels, dtype=np.int64),
        feature_names=tuple(source.feature_names),
        classes=("0", "1"),
        label_column="label",
        source="adult",
    )
    config = TrainingConfig(
        epochs=epochs + 1,
        batch_size=64,
        hidden=(100, 100, 100),
        noise_multiplier=1.0,
        standardise_on="data",
    )
    history = train(data, config).result.history
    return [entry.seconds for entry in history[1:]]


def _run(processes: int, threads: int | None, epochs: int) -> tuple[float, int]:
    """Median seconds per epoch of ``processes`` trainings at once, and the threads used."""
    context = multiprocessing.get_context("spawn")
    with context.Pool(processes) as pool:
        started = [pool.apply_async(_epoch_seconds, (threads, epochs)) for _ in range(processes)]
        seconds = [value for result in started for value in result.get()]
    if threads is None:
        import torch

        threads = torch.get_num_threads()
    return statistics.median(seconds), threads


def main() -> None:
    from epsstar.plumbing.runtime.threads import available_cores, choose_threads

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    rows = [["trainings at once", "threads", "default: s/epoch", "threads", "chosen: s/epoch"]]
    for processes in args.processes:
        default, default_threads = _run(processes, None, args.epochs)
        chosen_threads = choose_threads(processes)
        chosen, _ = _run(processes, chosen_threads, args.epochs)
        rows.append(
            [
                str(processes),
                str(default_threads),
                f"{default:.2f}",
                str(chosen_threads),
                f"{chosen:.2f}",
            ]
        )
    print(f"{available_cores()} cores available; {args.epochs} epochs per training\n")
    print(aligned_table(rows, left_columns=0))


if __name__ == "__main__":
    main()
