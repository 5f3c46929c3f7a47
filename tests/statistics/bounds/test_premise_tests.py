"""The tests of the premise: Fisher's test of the class mix against scipy's 2x2 test and a
closed form, the fold-wise rank test against a shift and under the null, and the verdict's
Bonferroni levels (four tests, each at alpha / 4)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binomtest, hypergeom

from epsstar.statistics.bounds.premise_tests import (
    TESTS,
    fold_rank_p_value,
    label_p_value,
    premise_verdict,
)


def test_two_classes_give_fishers_exact_p_value() -> None:
    """Checked against the hypergeometric law directly: the two-sided p-value sums the
    tables no likelier than the observed one."""
    train = ["a"] * 30 + ["b"] * 70
    population = ["a"] * 45 + ["b"] * 55
    law = hypergeom(200, 75, 100)  # 200 rows, 75 of class a, 100 in train
    observed = law.pmf(30)
    support = np.arange(0, 76)
    expected = law.pmf(support)[law.pmf(support) <= observed * (1 + 1e-7)].sum()
    # 1e-9 protects the p-value's arithmetic only: both sum the same probabilities.
    assert label_p_value(train, population, seed=0) == pytest.approx(expected, rel=1e-9)


def test_a_class_mix_moved_by_ten_points_is_flagged_and_one_mix_is_not() -> None:
    rng = np.random.default_rng(0)
    train = rng.choice(["<=50K", ">50K"], 1000, p=[0.76, 0.24])
    moved = rng.choice(["<=50K", ">50K"], 1000, p=[0.66, 0.34])
    same = rng.choice(["<=50K", ">50K"], 1000, p=[0.76, 0.24])
    assert label_p_value(train, moved, seed=0) < 0.05 / TESTS
    assert label_p_value(train, same, seed=0) > 0.05 / TESTS


def test_more_classes_use_a_seeded_monte_carlo_p_value() -> None:
    rng = np.random.default_rng(1)
    train = rng.choice(list("abc"), 600, p=[0.5, 0.3, 0.2])
    moved = rng.choice(list("abc"), 600, p=[0.35, 0.35, 0.3])
    p = label_p_value(train, moved, seed=4)
    assert p == label_p_value(train, moved, seed=4)
    # The Monte Carlo p-value counts the observed table: never below 1 / (1,999 + 1).
    assert 5e-4 <= p < 0.05 / TESTS
    assert label_p_value(["a"] * 5, ["a"] * 7, seed=0) == 1.0


def test_ranks_see_a_shift_in_every_fold() -> None:
    rng = np.random.default_rng(2)
    folds_m, folds_o = np.arange(400) % 2, np.arange(400) % 2
    shifted = fold_rank_p_value(rng.normal(0.4, 1, 400), rng.normal(0, 1, 400), folds_m, folds_o)
    assert shifted < 1e-4
    # One-sided: members ranked below the others are no evidence.
    below = fold_rank_p_value(rng.normal(-0.4, 1, 400), rng.normal(0, 1, 400), folds_m, folds_o)
    assert below > 0.5


def test_ranks_keep_their_level_when_both_folds_read_one_coincidence() -> None:
    """Both folds' z scores equal (the worst dependence): the mean of the z scores keeps
    the level, where Stouffer's sum would flag about twice as often. 2,000 null draws,
    the folds' scores the same draw; the binomial test protects against a false alarm rate
    above the level by more than chance allows (one-sided, 0.001)."""
    rng = np.random.default_rng(3)
    level = 0.05
    flags = 0
    for _ in range(2000):
        a, b = rng.normal(size=50), rng.normal(size=50)
        members, others = np.concatenate([a, a]), np.concatenate([b, b])
        folds = np.repeat([0, 1], 50)
        flags += fold_rank_p_value(members, others, folds, folds) < level
    assert binomtest(flags, 2000, level, alternative="greater").pvalue > 1e-3


def test_the_verdict_gives_each_test_a_quarter_of_alpha() -> None:
    tests = premise_verdict(False, ranks=0.02, labels=0.01, repeats=0.013, alpha=0.05)
    assert [t.name for t in tests] == [
        "blind lower bound",
        "blind ranks",
        "label frequencies",
        "exact repeats",
    ]
    assert all(t.level == pytest.approx(0.05 / 4) for t in tests)
    assert [t.flagged for t in tests] == [False, False, True, False]
    assert tests[2].to_dict() == {
        "test": "label frequencies",
        "p_value": 0.01,
        "level": pytest.approx(0.05 / 4),
        "flagged": True,
    }
