"""The table of benchmarks/reproduce.py: the default's columns and its count of DP headlines
above the accountant's ε, on records shaped as ``epsstar audit-many`` writes them."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from epsstar.statistics.names import DEFAULT_METHOD
from tests.benchmarks_.scripts import imported

PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "reproduce.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return imported(PATH, "reproduce_bench")


def record(
    strategy: str, star: float, epsilon: float | None, p: float | None = 0.5
) -> dict[str, Any]:
    params = {"epsilon": "" if epsilon is None else str(epsilon), "noise_multiplier": "1.2"}
    return {
        "entry": {"strategy": strategy, "params": params},
        "result": {
            "epsilon_star": star,
            "untested_epsilon_star": star + 0.1,
            "leak_p_value": p,
            "empirical_epsilon_star": 1.5,
            "utility": {"population": {"auroc": 0.8}, "train": {"accuracy": 0.9}},
        },
    }


def test_the_default_counts_dp_headlines_above_the_accounted_epsilon(bench: ModuleType) -> None:
    default = [
        record("dp-eps1-a", 0.0, 0.999),
        record("dp-eps1-a", 1.2, 0.999, p=0.01),  # above its ε, and at or above 1
        record("dp-eps3-b", 2.9, 2.997, p=0.02),  # below its ε, above 1
        record("nonprivate-e5", 4.0, None, p=0.0),  # a baseline has no ε to exceed
    ]
    assert bench.dp_verdict(default) == (
        f"{DEFAULT_METHOD}: 1 of 3 DP models read an Epsilon* above the accountant's epsilon; "
        "2 read 1 or more"
    )
    rows = bench.summary_rows(
        {
            # the paper's estimator audits the same models: the same entries, other values
            "parametric": [{**r, "result": {**r["result"], "epsilon_star": 0.3}} for r in default],
            DEFAULT_METHOD: default,
        },
        bench.PAPER["adult"],
    )
    header, *body = rows
    by_strategy = {row[0]: dict(zip(header, row, strict=True)) for row in body}
    assert by_strategy["dp-eps1-a"]["above DP epsilon"] == "1/2"
    assert by_strategy["dp-eps1-a"]["leak found"] == "1/2"
    assert by_strategy["dp-eps1-a"]["DP epsilon"] == "0.999 [0.999, 0.999]"
    assert by_strategy["dp-eps3-b"]["above DP epsilon"] == "0/1"
    assert by_strategy["nonprivate-e5"]["above DP epsilon"] == "-"
    assert by_strategy["nonprivate-e5"]["DP epsilon"] == "-"
