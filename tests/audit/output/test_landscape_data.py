"""The landscape's numbers (epsstar.audit.output.landscape_data): reading, strategies, frontier."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from epsstar.audit.many import read_manifest
from epsstar.audit.output.landscape_data import (
    EDGE,
    MIN_DENSITY_VALUES,
    landscape,
    pareto_front,
    read_results,
    stack_levels,
    training_privacy,
)
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.training.runs.sweep import MANIFEST_COLUMNS


def record(
    strategy: str, eps: float, auroc: float | None, repeat: int = 0, **params: Any
) -> dict[str, Any]:
    result = {
        "epsilon_star": eps,
        "utility": {"population": {"n": 10, "accuracy": 0.5, "auroc": auroc}},
    }
    return {"entry": {"strategy": strategy, "repeat": repeat, "params": params}, "result": result}


def failed(strategy: str, repeat: int = 0) -> dict[str, Any]:
    return {"entry": {"strategy": strategy, "repeat": repeat, "params": {}}, "error": "broken"}


# --- Pareto frontier -----------------------------------------------------------------------------


def test_pareto_front_on_hand_made_points() -> None:
    points = [(1.0, 0.9), (0.5, 0.8), (2.0, 0.85), (0.5, 0.7), (3.0, 0.95), (1.0, 0.9)]
    # (2.0, 0.85) is beaten by (1.0, 0.9); (0.5, 0.7) by (0.5, 0.8); equal points both stay.
    assert pareto_front(points) == [0, 1, 4, 5]
    assert pareto_front([]) == []
    assert pareto_front([(1.0, 1.0)]) == [0]


def beats(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] <= b[0] and a[1] >= b[1] and a != b


small = st.integers(0, 6).map(float)  # few values, so that ties are common


@given(st.lists(st.tuples(small, small), max_size=25))
def test_pareto_front_is_exactly_the_non_dominated_points(
    points: list[tuple[float, float]],
) -> None:
    front = set(pareto_front(points))
    for i, point in enumerate(points):
        dominated = any(beats(other, point) for other in points)
        assert (i in front) is not dominated
    if points:
        assert front  # some point always survives


# --- privacy of a strategy -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "dp"),
    [
        ({"target_epsilon": 3}, True),
        ({"target_epsilon": "1.0"}, True),
        ({"target_epsilon": ""}, False),
        ({"private": "true"}, True),
        ({"private": "True"}, True),
        ({"private": "False"}, False),
        ({"private": True}, True),
        ({"private": 0}, False),
        ({"private": False, "target_epsilon": None}, False),
        ({"epochs": 10}, False),
        ({}, False),
    ],
)
def test_training_privacy(params: dict[str, Any], dp: bool) -> None:
    assert training_privacy(params).dp is dp


def test_training_privacy_reads_types() -> None:
    privacy = training_privacy({"private": "True", "target_epsilon": "8"})
    assert (privacy.private, privacy.target_epsilon) == (True, 8.0)
    for params in ({"private": "perhaps"}, {"target_epsilon": "large"}, {"target_epsilon": True}):
        with pytest.raises(InputFileError, match=r"hyper-parameter .* Found"):
            training_privacy(params)


def test_training_privacy_keeps_the_accountants_epsilon_and_delta() -> None:
    privacy = training_privacy(
        {"target_epsilon": 1, "epsilon": "0.9988070743558518", "delta": 2.9556318103336777e-06}
    )
    assert (privacy.epsilon, privacy.delta) == (0.9988070743558518, 2.9556318103336777e-06)
    for shown_only in ({"epsilon": "n/a"}, {"delta": None}, {"epsilon": float("nan")}):
        privacy = training_privacy(shown_only)  # never refused: they are only shown
        assert (privacy.epsilon, privacy.delta) == (None, None)


def test_the_sweep_manifest_columns_give_the_category(tmp_path: Path) -> None:
    """``epsstar sweep`` writes ``private`` and ``target_epsilon``; audit-many passes them on."""
    rows = []
    for strategy, private, target in (("dp-eps1", True, 1.0), ("nonprivate-e5", False, None)):
        row = dict.fromkeys(MANIFEST_COLUMNS, "")
        row.update(
            model=f"{strategy}/0/model.onnx",
            train_data="train.csv",
            population_data="population.csv",
            label_column="label",
            strategy=strategy,
            repeat=0,
            private=private,
            target_epsilon="" if target is None else target,
            accountant="pld" if private else "",
            epochs=5,
        )
        rows.append(row)
    manifest = tmp_path / "manifest.csv"
    with manifest.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.DictWriter(stream, fieldnames=list(MANIFEST_COLUMNS))
        writer.writeheader()
        writer.writerows(rows)
    records = [
        {"entry": entry.to_dict(), "result": record("x", 0.5 + i, 0.8)["result"]}
        for i, entry in enumerate(read_manifest(manifest))
    ]
    data = landscape(records)
    assert [(s.name, s.privacy.dp) for s in data.strategies] == [
        ("dp-eps1", True),
        ("nonprivate-e5", False),
    ]
    assert data.strategies[0].privacy.target_epsilon == 1.0
    assert data.strategies[1].privacy.private is False


# --- reading -------------------------------------------------------------------------------------


def test_read_results_reads_both_kinds(tmp_path: Path) -> None:
    many = tmp_path / "many.json"
    models = [record("s", 1.0, 0.8, target_epsilon=1)]
    models[0]["report"] = "reports/s-0.html"
    many.write_text(json.dumps({"models": models}), encoding="utf-8")
    single = tmp_path / "solo-model.json"
    single.write_text(json.dumps(record("x", 2.0, 0.9)["result"]), encoding="utf-8")
    records = read_results([many, single])
    assert [r["entry"]["strategy"] for r in records] == ["s", "solo-model"]
    assert records[0]["report"] == str(tmp_path.resolve() / "reports" / "s-0.html")


def test_read_results_refuses_other_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    for content, message in (
        ("not json", "must be JSON"),
        (json.dumps({"something": 1}), "not an epsstar results file"),
        (json.dumps({"models": []}), "hold no audited models"),
    ):
        bad.write_text(content, encoding="utf-8")
        with pytest.raises(InputFileError, match=message):
            read_results([bad])
    with pytest.raises(InputFileError, match="no such file"):
        read_results([tmp_path / "missing.json"])


# --- the landscape -------------------------------------------------------------------------------


def test_strategies_means_bars_and_frontier() -> None:
    records = [
        record("a", 1.0, 0.80, epochs=10),
        record("a", 3.0, 0.90, repeat=1, epochs=10),  # mean (2.0, 0.85)
        failed("a", repeat=2),
        record("b", 0.5, 0.70, target_epsilon=1),
        record("c", 2.5, 0.80, epochs=50),  # beaten by a
        record("d", 0.1, None, epochs=1),  # no AUROC: listed, not plotted
    ]
    data = landscape(records)
    assert data.n_models == 6
    by_name = {s.name: s for s in data.strategies}
    assert list(by_name) == ["a", "b", "c", "d"]
    a = by_name["a"]
    assert (a.n_models, a.n_failed, a.epsilons, a.utilities) == (3, 1, (1.0, 3.0), (0.8, 0.9))
    assert a.epsilon is not None
    assert a.utility is not None
    assert (a.epsilon.mean, a.epsilon.low, a.epsilon.high) == (2.0, 1.0, 3.0)
    assert a.utility.mean == pytest.approx(0.85)
    assert a.mechanism_epsilon == pytest.approx(math.log((math.e + math.e**3) / 2))
    assert [s.pareto for s in data.strategies] == [True, True, False, False]
    assert [s.plotted for s in data.strategies] == [True, True, True, False]
    assert by_name["d"].utility is None
    assert by_name["d"].epsilon is not None
    # The frontier as a step line from b (0.5, 0.7) up to a (2.0, 0.85).
    assert data.frontier_x == (0.5, 2.0, 2.0)
    assert data.frontier_y == pytest.approx((0.7, 0.7, 0.85))
    # Axes cover every plotted value with 8 % of their span to spare.
    assert data.epsilon_range == pytest.approx((0.3, 3.2))
    assert data.utility_range == pytest.approx((0.684, 0.916))
    # Epsilon* is never below 0: its axis starts just below 0 (EDGE of the axis), so that
    # models at 0 are drawn whole, not cut by the frame.
    low, high = landscape([record("x", 0.0, 0.5), record("y", 1.0, 0.6)]).epsilon_range
    assert low == pytest.approx(-EDGE * high)


def test_a_strategys_hyper_parameters_are_those_its_models_share() -> None:
    """A repeat's own files, seed and accuracy are not the strategy's hyper-parameters."""
    records = [
        record("a", 1.0, 0.8, repeat=r, lr=0.01, seed=r, onnx=f"a/{r}/model.onnx", acc=0.8 + r)
        for r in range(3)
    ]
    records.append(record("b", 1.0, 0.8, lr=0.1, seed=0, onnx="b/0/model.onnx"))
    by_name = {s.name: s for s in landscape(records).strategies}
    assert dict(by_name["a"].params) == {"lr": 0.01}
    # One model: nothing tells its own values from the strategy's, so all are listed.
    assert dict(by_name["b"].params) == {"lr": 0.1, "seed": 0, "onnx": "b/0/model.onnx"}


def test_marginal_densities_per_category() -> None:
    records = [record(f"base{i}", 1.0 + i, 0.8 + 0.01 * i, epochs=i) for i in range(5)]
    records += [record(f"dp{i}", 0.3 + 0.1 * i, 0.7, target_epsilon=1) for i in range(4)]
    data = landscape(records)
    assert [m.dp for m in data.marginals] == [False, True]
    baseline, dp = data.marginals
    assert baseline.epsilons == (1.0, 2.0, 3.0, 4.0, 5.0)
    assert baseline.epsilon_density is not None
    assert baseline.epsilon_density.shape == data.epsilon_grid.shape
    assert baseline.utility_density is not None
    assert baseline.utility_density.shape == data.utility_grid.shape
    assert np.all(baseline.epsilon_density >= 0)
    assert len(dp.epsilons) == MIN_DENSITY_VALUES - 1
    assert dp.epsilon_density is None  # four distinct values are too few: ticks only
    assert dp.utility_density is None
    assert data.epsilon_grid[0] == data.epsilon_range[0]
    assert data.epsilon_grid[-1] == data.epsilon_range[1]
    tallest = float(baseline.epsilon_density.max())
    assert data.epsilon_density_range == (0.0, pytest.approx(1.1 * tallest))
    assert data.epsilon_tick == pytest.approx(0.12 * tallest)


def test_one_frontier_point_reaches_the_right_edge() -> None:
    data = landscape([record("only", 1.0, 0.8)], utility="auroc")
    assert data.frontier_x == (1.0, data.epsilon_range[1])
    assert data.frontier_y == (0.8, 0.8)
    assert data.marginals[0].epsilon_density is None
    assert data.epsilon_density_range == (0.0, pytest.approx(1.1))  # no density: unit axis


def test_accuracy_is_the_other_utility() -> None:
    data = landscape([record("s", 1.0, None), record("t", 2.0, 0.9)], utility="accuracy")
    assert [s.utilities for s in data.strategies] == [(0.5,), (0.5,)]
    with pytest.raises(InvalidInputError, match="utility must be one of auroc, accuracy"):
        landscape([record("s", 1.0, 0.8)], utility="f1")


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([{}], "a record needs an entry with a strategy. Found keys \\[\\]"),
        ([{"entry": {}}], "needs an entry with a strategy"),
        ([{"entry": {"strategy": "s"}}], "neither a result nor an error"),
        ([{"entry": {"strategy": "s"}, "result": {}}], "has no epsilon_star. Found keys \\[\\]"),
        ([{"entry": {"strategy": "s"}, "result": {"epsilon_star": "1"}}], "no epsilon_star"),
        (
            [{"entry": {"strategy": "s"}, "result": {"epsilon_star": math.inf}}],
            "must be a finite number ≥ 0. Found inf",
        ),
        ([record("s", 1.0, 0.8) | {"entry": {"strategy": "s", "params": [1]}}], "params"),
        ([record("s", 1.0, 0.8) | {"entry": {"strategy": "s", "repeat": "x"}}], "repeat"),
        ([failed("s"), failed("t")], "no audited model has both .* Found 2 model\\(s\\), 2 failed"),
        ([record("s", 1.0, None)], "population auroc to plot"),
    ],
)
def test_unusable_records_are_refused(records: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(InputFileError, match=message) as caught:
        landscape(records)
    assert "\n" not in str(caught.value)


def test_models_at_one_value_stack_one_dot_each() -> None:
    # 8 baselines and 15 DP models at Epsilon* 0 (as in the demo) and 3 baselines elsewhere.
    records = [record(f"base{i % 2}", 0.0, 0.80 + 0.001 * i, epochs=i % 2) for i in range(8)]
    records += [record(f"dp{i % 3}", 0.0, 0.70 + 0.001 * i, target_epsilon=1) for i in range(15)]
    records += [record("base9", v, 0.9, epochs=9) for v in (1.0, 2.0, 3.0)]
    data = landscape(records)
    baseline, dp = data.marginals
    # Every model at 0 has its own level: baselines first (0-7), then DP (8-22).
    assert baseline.epsilon_levels == (*range(8), 0, 0, 0)
    assert dp.epsilon_levels == tuple(range(8, 23))
    assert data.epsilon_stack == 23
    assert dp.point_mass == 0.0
    assert dp.epsilon_density is None
    assert baseline.point_mass is None
    assert baseline.epsilon_density is not None
    assert len(dp.utility_levels) == len(dp.utilities) == 15


def test_stack_levels_share_a_bin() -> None:
    assert stack_levels([0.0, 0.001, 0.5, 1.0, 0.999], (0.0, 1.0), bins=10) == (0, 1, 0, 0, 1)
    # Values beyond the span go to the end bins; an empty span stacks everything.
    assert stack_levels([-1.0, 0.0, 2.0, 1.0], (0.0, 1.0), bins=4) == (0, 1, 0, 1)
    assert stack_levels([3.0, 3.0], (3.0, 3.0)) == (0, 1)
