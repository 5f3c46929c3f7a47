"""The power benchmark's wide tables: the columns of coin flips it adds go with the pool's
rows (a repeated row stays a repeat), and a case runs under a cap on the columns fitted."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.benchmarks_.scripts import imported

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "premise.py"


def test_noise_columns_go_with_the_rows_and_a_case_runs_under_a_cap() -> None:
    premise = imported(SCRIPT, "premise_benchmark")
    pool = premise._adult()
    rng = np.random.default_rng(0)
    noisy = premise.with_noise(pool, 50, rng)
    assert noisy.shape == (len(pool), pool.shape[1] + 50)
    flips = noisy[[f"noise{j}" for j in range(50)]].to_numpy()
    assert set(np.unique(flips)) == {0, 1}
    assert premise.with_noise(pool, 0, rng) is pool
    train, population = premise.deduplicated(noisy, 300, rng)
    assert train.duplicated().sum() == train.index.duplicated().sum() > 0
    flagged, auc = premise._flag(train, population, 0, 8)
    assert len(flagged) == 5
    assert flagged[3]  # the test of repeats sees the de-duplicated population
    assert 0.0 <= auc <= 1.0
