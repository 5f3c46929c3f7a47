"""The held-out Clopper-Pearson bound (both directions), the exact leak test and the gate rules."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.bounds.from_counts import epsilon_lower_bound
from epsstar.statistics.bounds.gate import gate_statistic
from epsstar.statistics.bounds.held_out_bound import (
    _bound_at,
    candidate_thresholds,
    error_counts,
    held_out_halves,
    split_lower_bound,
)
from epsstar.statistics.bounds.leak_test import held_out_leak_test


@pytest.mark.parametrize("seed", range(3))
def test_members_at_higher_loss_are_bounded_like_members_at_lower_loss(seed: int) -> None:
    rng = np.random.default_rng(seed)
    members, others = rng.normal(2.0, 1.0, 2000), rng.normal(0.0, 1.0, 2000)
    above = split_lower_bound(members, others, delta=1e-4, seed=seed)
    below = split_lower_bound(-members, -others, delta=1e-4, seed=seed)
    assert above.direction == "members_higher"
    assert below.direction == "members_lower"
    assert above.epsilon > 2.0
    assert below.epsilon > 2.0
    # A loss threshold and its negation split the same records: nearly the same bound. The
    # candidate thresholds are inverted-CDF quantiles, which for -x fall on the order
    # statistic next to the mirror of x's, so the two searches see neighbouring thresholds
    # (seeds 0-2: 0.064, 0 and 0 apart); 0.1 allows that, while a swapped direction or a
    # miscounted side moves the bound by more than 1.
    assert above.epsilon == pytest.approx(below.epsilon, abs=0.1)


def test_the_reported_counts_are_the_evaluation_halves_at_the_recorded_test() -> None:
    rng = np.random.default_rng(5)
    members, others = rng.normal(-0.5, 1.0, 801), rng.normal(0.0, 1.0, 600)
    bound = split_lower_bound(members, others, delta=1e-5, seed=9)
    _, halves = held_out_halves(members, others, seed=9)
    eval_members, eval_others = (np.asarray(half) for half in halves)
    assert bound.threshold is not None
    if bound.direction == "members_lower":
        fp = int(np.sum(eval_others <= bound.threshold))
        fn = int(np.sum(eval_members > bound.threshold))
    else:
        fp = int(np.sum(eval_others > bound.threshold))
        fn = int(np.sum(eval_members <= bound.threshold))
    assert (bound.false_positives, bound.negatives) == (fp, eval_others.size)
    assert (bound.false_negatives, bound.positives) == (fn, eval_members.size)
    expected = epsilon_lower_bound(fp, eval_others.size, fn, eval_members.size, delta=1e-5)
    assert bound.epsilon == expected.epsilon


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 2**31),
    st.sampled_from(["members_lower", "members_higher"]),
    st.floats(0.5, 0.999),
)
def test_the_vectorised_selection_score_is_the_scalar_bound(
    seed: int, direction: str, confidence: float
) -> None:
    rng = np.random.default_rng(seed)
    members = np.sort(np.round(rng.normal(0.3, 1.0, 150), 1))  # ties on purpose
    others = np.sort(np.round(rng.normal(0.0, 1.0, 120), 1))
    thresholds = candidate_thresholds(members, others, 8)
    fast = _bound_at(thresholds, direction, members, others, 1e-3, confidence)  # type: ignore[arg-type]
    fp, fn = error_counts(thresholds, direction, members, others)  # type: ignore[arg-type]
    slow = [
        epsilon_lower_bound(
            int(a), others.size, int(b), members.size, delta=1e-3, confidence=confidence
        ).epsilon
        for a, b in zip(fp, fn, strict=True)
    ]
    np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-12)


def test_the_bound_rarely_exceeds_zero_when_nothing_leaks() -> None:
    rng = np.random.default_rng(11)
    above = [
        split_lower_bound(rng.gamma(2, 5, 400), rng.gamma(2, 5, 400), delta=1e-4, seed=r).epsilon
        > 0
        for r in range(200)
    ]
    assert np.mean(above) <= 0.05


def test_the_leak_test_p_value_is_fishers_on_the_recorded_counts() -> None:
    rng = np.random.default_rng(2)
    test = held_out_leak_test(rng.normal(-0.3, 1, 500), rng.normal(0, 1, 700), seed=4)
    table = [
        [test.true_positives, test.positives - test.true_positives],
        [test.false_positives, test.negatives - test.false_positives],
    ]
    assert (test.positives, test.negatives) == (250, 350)
    assert test.p_value == stats.fisher_exact(table, alternative="greater").pvalue
    assert test.p_value < 0.05


@pytest.mark.parametrize(
    "draw",
    [
        lambda rng: rng.normal(0.0, 1.0, 300),
        lambda rng: rng.integers(0, 4, 300).astype(float),  # heavy ties
        lambda rng: rng.standard_t(2, 300),
    ],
    ids=["normal", "discrete", "student-t"],
)
def test_the_leak_test_keeps_its_level_when_nothing_leaks(draw: object) -> None:
    rng = np.random.default_rng(8)
    p_values = np.array(
        [held_out_leak_test(draw(rng), draw(rng), seed=r).p_value for r in range(400)]  # type: ignore[operator]
    )
    # At most 5 % in expectation; 400 repeats put 9 % beyond 3.5 standard errors.
    assert np.mean(p_values < 0.05) <= 0.09


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_the_leak_test_finds_a_shift_and_a_memorised_tail(sign: float) -> None:
    rng = np.random.default_rng(3)
    shifted = held_out_leak_test(sign * rng.normal(-0.3, 1, 4000), sign * rng.normal(0, 1, 4000))
    assert shifted.p_value < 1e-6
    assert shifted.direction == ("members_lower" if sign > 0 else "members_higher")
    memorised = np.concatenate([rng.normal(0, 1, 3960), rng.normal(-8, 0.1, 40)])
    tail = held_out_leak_test(sign * memorised, sign * rng.normal(0, 1, 4000))
    assert tail.p_value < 1e-3


def _leak(p_value: float) -> object:
    from epsstar.statistics.bounds.leak_test import LeakTest

    return LeakTest(p_value, 0.0, "members_lower", 1, 10, 1, 10)


@pytest.mark.parametrize(
    ("rule", "p_value", "expected"),
    [
        ("estimate", 0.5, 1.7),
        ("lower-bound", 0.5, 0.4),
        ("significant", 0.5, 0.0),
        ("significant", 0.049, 1.7),
        ("significant", 0.05, 0.0),
    ],
)
def test_each_rule_compares_its_statistic(rule: str, p_value: float, expected: float) -> None:
    bound = epsilon_lower_bound(0, 100, 30, 100, delta=1e-4)
    bound = type(bound)(**{**bound.to_dict(), "epsilon": 0.4})  # type: ignore[arg-type]
    gate = gate_statistic(rule, 1.7, bound, _leak(p_value))  # type: ignore[arg-type]
    assert gate.value == expected
    assert gate.level == 0.05
    assert gate.to_dict()["leak_found"] is (p_value < 0.05)


def _bound_of(confidence: float, epsilon: float) -> object:
    bound = epsilon_lower_bound(0, 100, 30, 100, delta=1e-4, confidence=confidence)
    return type(bound)(**{**bound.to_dict(), "epsilon": epsilon})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("rule", "expected_value", "expected_test"),
    [
        # p-values 0.02 and 0.01 at level 0.05/2 = 0.025: both leak; the larger Epsilon* wins.
        ("significant", 2.5, "rmia"),
        ("estimate", 2.5, "rmia"),
        ("lower-bound", 0.9, "lira"),
    ],
)
def test_a_gate_over_tests_takes_the_largest_statistic_at_the_bonferroni_level(
    rule: str, expected_value: float, expected_test: str
) -> None:
    from epsstar.statistics.bounds.from_counts import bonferroni_confidence
    from epsstar.statistics.bounds.gate import TestedStatistic, gate_over_tests

    each = bonferroni_confidence(0.95, 3)
    tests = [
        TestedStatistic("loss", 1.0, _leak(0.03), _bound_of(each, 0.2)),  # type: ignore[arg-type]
        TestedStatistic("lira", 2.0, _leak(0.02), _bound_of(each, 0.9)),  # type: ignore[arg-type]
        TestedStatistic("rmia", 2.5, _leak(0.01), _bound_of(each, 0.5)),  # type: ignore[arg-type]
    ]
    gate = gate_over_tests(rule, tests)  # type: ignore[arg-type]
    assert gate.level == pytest.approx(0.05 / 3)
    assert (gate.value, gate.test, gate.n_tests) == (expected_value, expected_test, 3)
    assert gate.to_dict()["test"] == expected_test
    # At 0.05/3 the loss attack's p = 0.03 is no leak, though it would be one alone.
    assert gate_statistic("significant", 1.0, tests[0].bound, tests[0].leak).value == 0.0
    with pytest.raises(InvalidInputError, match="at least one test"):
        gate_over_tests("estimate", [])


def test_an_unknown_rule_is_refused_with_its_name() -> None:
    bound = epsilon_lower_bound(0, 100, 30, 100)
    with pytest.raises(InvalidInputError, match="'lenient'"):
        gate_statistic("lenient", 1.0, bound, _leak(0.5))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fpr", "fnr", "expected"),
    [
        (0.2, 0.3, ()),
        (1e-5, 0.3, ("FPR",)),
        (0.2, 1e-5, ("FNR",)),
        (1.0 - 2.96e-6, 0.3, ("1-FPR",)),
        (0.2, 1.0 - 2.96e-6, ("1-FNR",)),
        (1e-5, 1.0 - 1e-6, ("FPR", "1-FNR")),
    ],
)
def test_each_corner_is_checked_against_the_side_that_counts_it(
    fpr: float, fnr: float, expected: tuple[str, ...]
) -> None:
    from epsstar.statistics.results import EpsilonStarResult

    result = EpsilonStarResult(
        epsilon=1.0,
        delta=1e-6,
        method="tails",
        family=None,
        fpr=fpr,
        fnr=fnr,
        threshold=0.0,
        threshold_transformed=None,
        attained_by="(1-delta-fnr)/fpr",
        n_train=20_000,  # 1/n = 5e-5
        n_population=10_000,  # 1/m = 1e-4
        rate_window=(1e-6, 1 - 1e-6),
        seed=0,
    )
    assert result.unsupported_rates == expected
    assert result.tail_extrapolated is bool(expected)
    assert result.to_dict()["unsupported_rates"] == list(expected)


@pytest.mark.parametrize(
    ("rate", "shown"),
    [
        (0.5, "0.5"),
        (1.0 - 2.96e-6, "1 - 2.96e-06"),
        (1.0, "1"),
        (0.9985, "0.9985"),
        (3e-7, "3e-07"),
    ],
)
def test_rates_near_one_show_their_distance_from_one(rate: float, shown: str) -> None:
    from epsstar.cli.common.text_table import rate_text

    assert rate_text(rate) == shown
