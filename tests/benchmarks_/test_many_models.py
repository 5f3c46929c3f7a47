"""The arithmetic floor of benchmarks/many_models.py: multiply-adds counted from the shapes
of a DP-SGD step, timed at this machine's rate for those shapes."""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType

import pytest

from tests.benchmarks_.scripts import imported

pytest.importorskip("torch")

PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "many_models.py"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return imported(PATH, "many_models_bench")


def test_a_steps_products_are_counted_from_its_shapes(bench: ModuleType) -> None:
    """A 3 → 4 → 1 MLP on 5 examples: forward 5·(12 + 4), backward to the hidden layer's
    output 5·4 (none to the input), weight gradients 5·(12 + 4), for each of 2 models."""
    products = bench.step_products(5, [3, 4, 1])
    assert [p.name for p in products] == [
        "forward 0",
        "forward 1",
        "backward 1",
        "weights 0",
        "weights 1",
    ]
    assert sum(p.multiply_adds(2) for p in products) == 2 * (80 + 20 + 80)
    # ‖g‖², ‖a‖² and the clip scaling of every layer: 5·((3 + 2·4) + (4 + 2·1)) per model
    assert bench.norm_multiply_adds(2, 5, [3, 4, 1]) == 2 * 5 * 17


def test_the_floor_is_the_runs_multiply_adds_at_the_measured_rate(bench: ModuleType) -> None:
    floor = bench.arithmetic_floor(2, 5, [3, 4, 1], steps=10)
    assert floor.products == 360
    assert floor.step_seconds > 0.0
    assert math.isclose(floor.rate, 360 / floor.step_seconds)
    assert math.isclose(floor.seconds, 10 * (360 + 170) / floor.rate)


def test_each_product_is_timed_in_its_faster_orientation(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A product timed as (Yᵀ·Xᵀ)ᵀ when that is faster: here a fake clock charges X·Y
    three times what the transposed product costs."""
    import torch

    shapes: list[tuple[int, int, int]] = []
    clock = [0.0]
    real = torch.bmm

    def charged(x: torch.Tensor, y: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        shapes.append((x.shape[1], x.shape[2], y.shape[2]))
        clock[0] += 3.0 if x.shape[1] == 7 else 1.0
        return real(x, y, out=out)

    monkeypatch.setattr(bench.torch, "bmm", charged)
    monkeypatch.setattr(bench.time, "perf_counter", lambda: clock[0])
    seconds = bench.product_seconds(2, bench.Product("p", 7, 3, 2), repeats=1, calls=1)
    assert seconds == 1.0
    assert {(7, 3, 2), (2, 3, 7)} <= set(shapes)


def test_a_batched_run_gives_its_call_its_training_and_their_cpu(bench: ModuleType) -> None:
    """The training is part of the call, and its CPU seconds are counted to its last epoch."""
    import dataclasses

    from epsstar.training.trainer import TrainingConfig, plan_privacy
    from tests.training.conftest import make_table

    data = make_table(300, 4, 2, seed=3)
    config = TrainingConfig(
        epochs=2, batch_size=50, hidden=(4,), noise_multiplier=1.0, standardise_on="data"
    )
    plan = plan_privacy(config, data.n_records)
    configs = [dataclasses.replace(config, seed=seed) for seed in range(2)]
    call, training, cpu = bench.batched_run(data, configs, plan)
    assert 0.0 < training <= call
    assert cpu > 0.0
