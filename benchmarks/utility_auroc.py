"""Speed of the one-vs-rest AUROC an audit computes on the population, against scikit-learn.

A multi-class audit reports the macro one-vs-rest AUROC of the model's class probabilities
on the population (``epsstar.statistics.utility.auroc``). This times it on class
probabilities shaped like a Purchase-100 model's (softmax of random logits with the true
class lifted, ``--records`` rows by ``--classes`` classes), handed over as float32 (a
float32 model's outputs) and as float64 that float32 cannot hold, against scikit-learn's
``roc_auc_score(multi_class="ovr")`` on the same arrays, and checks that the values agree.
Times are CPU seconds, the best of ``--repeats``.

    python benchmarks/utility_auroc.py
    python benchmarks/utility_auroc.py --records 20000 --classes 10
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
from scipy.special import softmax
from sklearn.metrics import roc_auc_score

from epsstar.cli.common.text_table import aligned_table
from epsstar.statistics.utility import auroc


def scores_like_a_model(records: int, classes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Labels and float32 class probabilities whose true class is lifted by 2 logits."""
    rng = np.random.default_rng(seed)
    labels = np.concatenate([np.arange(classes), rng.integers(0, classes, records - classes)])
    logits = rng.normal(size=(records, classes)) + 2.0 * np.eye(classes)[labels]
    return labels, softmax(logits, axis=1).astype(np.float32)


def best_cpu(run: Callable[[], float], repeats: int) -> tuple[float, float]:
    """(least CPU seconds over ``repeats`` runs, the value)."""
    times, value = [], 0.0
    for _ in range(repeats):
        start = time.process_time()
        value = run()
        times.append(time.process_time() - start)
    return min(times), value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    labels, narrow = scores_like_a_model(args.records, args.classes, args.seed)
    # float64 scores float32 cannot hold: the path that sorts in float64
    wide = narrow.astype(np.float64) * (1.0 + 1e-12)
    rows = [["scores", "epsstar CPU s", "scikit-learn CPU s", "ratio", "AUROC", "|difference|"]]
    for name, scores in (("float32", narrow), ("float64", wide)):

        def ours_once(s: np.ndarray = scores) -> float:
            value, _ = auroc(labels, s, args.classes)
            assert value is not None  # every class is present
            return value

        def peer_once(s: np.ndarray = scores) -> float:
            return float(roc_auc_score(labels, s, multi_class="ovr"))

        ours, value = best_cpu(ours_once, args.repeats)
        peer, expected = best_cpu(peer_once, args.repeats)
        rows.append(
            [
                name,
                f"{ours:.3f}",
                f"{peer:.3f}",
                f"{ours / peer:.2f}x",
                f"{value:.6f}",
                f"{abs(value - expected):.1e}",
            ]
        )
    print(
        f"{args.records:,} records x {args.classes} classes, one-vs-rest macro AUROC, "
        f"best of {args.repeats}"
    )
    print(aligned_table(rows))


if __name__ == "__main__":
    main()
