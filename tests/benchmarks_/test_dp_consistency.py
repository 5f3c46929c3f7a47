"""The pure helpers of benchmarks/dp_consistency.py: per-cell counts, cache names, details."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest

from tests.benchmarks_.scripts import imported

PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "dp_consistency.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return imported(PATH, "dp_consistency_bench")


def row(bench: ModuleType, dataset: str, target: float, seed: int, **values: object) -> object:
    base = bench.ModelRow(
        dataset=dataset,
        target_epsilon=target,
        accounted_epsilon=target - 0.001,
        training_delta=1e-6,
        audit_delta=1e-6,
        seed=seed,
        epsilon_star=0.5,
        method="tails-tested",
        distinct_losses=1000,
        crossfit_epsilon=0.5,
        gate_value=0.0,
        leak_p_value=0.5,
        lower_bound=0.0,
        unsupported_rates=(),
        attained_by="(1-delta-FNR)/FPR",
        fpr=0.01,
        fnr=0.5,
        empirical_epsilon=0.4,
        plug_in_epsilon=0.6,
        crossfit_scores=(0.5, 0.0),
        train_accuracy=0.8,
        test_accuracy=0.8,
        train_seconds=1.0,
        from_cache=False,
    )
    return replace(base, **values)


def test_summary_counts_strict_excesses_per_cell(bench: ModuleType) -> None:
    rows = [
        row(bench, "adult", 1.0, 0, epsilon_star=1.2, gate_value=1.2),
        row(bench, "adult", 1.0, 1, epsilon_star=0.999),  # equal to the accounted ε: not above
        row(bench, "adult", 1.0, 2, epsilon_star=0.2, lower_bound=1.5),
        row(bench, "purchase-like", 3.0, 0, epsilon_star=3.5),
        row(bench, "purchase-like", 3.0, 1, epsilon_star=0.1),
    ]
    adult, purchase = bench.summarise(rows)
    assert (adult.dataset, adult.target_epsilon, adult.models) == ("adult", 1.0, 3)
    assert adult.max_epsilon_star == pytest.approx(1.2)
    assert adult.mean_epsilon_star == pytest.approx((1.2 + 0.999 + 0.2) / 3)
    assert (adult.headline_above, adult.gate_above, adult.lower_bound_above) == (1, 1, 1)
    assert (purchase.models, purchase.headline_above, purchase.gate_above) == (2, 1, 0)
    assert purchase.mean_epsilon_star == pytest.approx(1.8)


def test_details_list_only_models_above_their_accounted_epsilon(bench: ModuleType) -> None:
    rows = [
        row(bench, "adult", 1.0, 0, epsilon_star=1.2, unsupported_rates=("FPR",)),
        row(bench, "adult", 1.0, 1, epsilon_star=0.3, gate_value=0.3),
        row(bench, "adult", 3.0, 2, epsilon_star=0.3, gate_value=3.1),
    ]
    lines = bench.excess_details(rows)
    assert len(lines) == 2
    assert "seed=0" in lines[0]
    assert "unsupported rates FPR" in lines[0]
    assert "seed=2" in lines[1]
    assert "gate stat 3.1000" in lines[1]


def test_cache_names_differ_by_every_setting(bench: ModuleType) -> None:
    recipe = bench.RECIPES["purchase-like"]
    name = bench.cache_name("purchase-like", 1.0, 0, recipe)
    assert name == bench.cache_name("purchase-like", 1.0, 0, recipe)
    others = {
        bench.cache_name("adult", 1.0, 0, recipe),
        bench.cache_name("purchase-like", 3.0, 0, recipe),
        bench.cache_name("purchase-like", 1.0, 1, recipe),
        bench.cache_name("purchase-like", 1.0, 0, replace(recipe, epochs=recipe.epochs + 1)),
    }
    assert name not in others
    assert len(others) == 4
