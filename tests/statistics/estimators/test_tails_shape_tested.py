"""``tails-shape-tested``: tails-tested, with Gaussian-shift tails where the ROC slope is 1."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.estimators import estimator as estimator_module
from epsstar.statistics.estimators.crossfit import crossfit_epsilon
from epsstar.statistics.estimators.estimator import epsilon_star, estimate
from epsstar.statistics.estimators.methods import (
    Bootstrap,
    TailsShapeTested,
    TailsTested,
    method_config,
)
from epsstar.statistics.estimators.optimizer import parametric_supremum
from epsstar.statistics.fitting.binormal_tails import fit_shift_roc
from epsstar.statistics.fitting.roc_slope import RocSlope, roc_slope
from epsstar.statistics.summaries.loss_summary import SummaryPlan, summarise_losses

SHAPED = "tails-shape-tested"


def _gaussian(n: int, mu: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, 1.0, n), rng.normal(mu, 1.0, n)


def test_on_a_power_shaped_leak_it_is_tails_tested_draw_for_draw() -> None:
    rng = np.random.default_rng(1)
    train, population = rng.gamma(2.0, 5.0, 4000), rng.gamma(3.0, 5.0, 4000)
    shaped = epsilon_star(train, population, delta=1e-5, method=SHAPED, seed=3)
    default = epsilon_star(train, population, delta=1e-5, method="tails-tested", seed=3)
    assert shaped.method == SHAPED
    assert shaped.epsilon > 1.0
    assert (shaped.epsilon, shaped.fpr, shaped.fnr, shaped.attained_by) == (
        default.epsilon,
        default.fpr,
        default.fnr,
        default.attained_by,
    )
    assert shaped.leak_p_value == default.leak_p_value
    assert shaped.untested_epsilon == default.untested_epsilon
    assert shaped.tail_fits == default.tail_fits
    assert shaped.note is not None
    assert shaped.note.startswith("slope of the binormal ROC curve 1.")
    assert shaped.note.endswith(": power tails")
    assert ", not within 0.05 of 1" in shaped.note


def test_on_the_gaussian_mechanism_it_takes_the_gaussian_shift_tails() -> None:
    train, population = _gaussian(10_000, 0.5, seed=4)
    delta = 1.1e-5
    shaped = epsilon_star(train, population, delta=delta, method=SHAPED, seed=2)
    default = epsilon_star(train, population, delta=delta, method="tails-tested", seed=2)
    binormal = crossfit_epsilon(train, population, delta, fit_shift_roc, seed=2)
    assert shaped.method == SHAPED
    assert shaped.leak_p_value == default.leak_p_value
    assert shaped.leak_p_value is not None
    assert shaped.leak_p_value < 0.05
    # The cross-fitted estimate of the binormal tails, on the default's halves.
    assert shaped.epsilon == binormal.epsilon
    assert shaped.tail_fits["train"]["family"] == "binormal-tails"
    assert shaped.note is not None
    assert "Gaussian-shift tails" in shaped.note
    assert "within 0.05 of 1 on the log scale with 2 standard errors to spare" in shaped.note
    truth = parametric_supremum(stats.norm(0, 1), stats.norm(0.5, 1), delta).epsilon
    # On this draw the power tails overshoot the truth (1.98) by 0.5, the shifted ones do not.
    assert abs(shaped.epsilon - truth) < 0.25 < default.epsilon - truth
    json.dumps(shaped.to_dict(), allow_nan=False)


def test_a_heavy_tailed_shift_passes_the_slope_but_bends_and_keeps_the_power_tails() -> None:
    rng = np.random.default_rng(11)
    train, population = rng.standard_t(3, 10_000) - 0.5, rng.standard_t(3, 10_000)
    delta = 1e-5
    shaped = epsilon_star(train, population, delta=delta, method=SHAPED, seed=1)
    default = epsilon_star(train, population, delta=delta, method="tails-tested", seed=1)
    assert shaped.note is not None
    assert "within 0.05 of 1 on the log scale" in shaped.note
    assert "the curve bends towards the diagonal in its tails" in shaped.note
    assert shaped.note.endswith(": power tails")
    assert shaped.epsilon == default.epsilon
    # The straight curve's tails would read about twice the truth (0.53) here.
    straight = crossfit_epsilon(train, population, delta, fit_shift_roc, seed=1)
    truth = parametric_supremum(stats.t(3, loc=-0.5), stats.t(3), delta).epsilon
    assert straight.epsilon - truth > 0.25 > abs(shaped.epsilon - truth)


def test_too_few_records_cannot_pass_the_slope_check() -> None:
    train, population = _gaussian(1000, 0.5, seed=5)
    shaped = epsilon_star(train, population, delta=1e-5, method=SHAPED, seed=0)
    default = epsilon_star(train, population, delta=1e-5, method="tails-tested", seed=0)
    assert shaped.epsilon == default.epsilon
    assert shaped.note is not None
    assert shaped.note.endswith(": power tails")
    assert "; the check of the tails' shape needs at least 1,601 records a side" in shaped.note


def test_an_interval_keeps_the_shape_the_point_estimate_took(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    train, population = _gaussian(10_000, 0.5, seed=4)
    point = epsilon_star(train, population, delta=1e-5, method=SHAPED, seed=3)
    assert point.note is not None
    assert "Gaussian-shift tails" in point.note
    checks: list[int] = []

    def counted(*args: Any) -> RocSlope:
        checks.append(1)
        return roc_slope(*args)

    monkeypatch.setattr(estimator_module, "roc_slope", counted)
    found = epsilon_star(
        train, population, delta=1e-5, method=SHAPED, seed=3, interval=Bootstrap(0.9, 20)
    )
    assert len(checks) == 1  # the point estimate's; the replicates reuse its choice
    assert found.epsilon == point.epsilon
    assert found.interval is not None
    assert found.interval.low <= point.epsilon <= found.interval.high
    # The replicates fit the shifted tails: their interval is not the power tails'.
    power = epsilon_star(
        train, population, delta=1e-5, method="tails-tested", seed=3, interval=Bootstrap(0.9, 20)
    )
    assert power.interval is not None
    assert found.interval.high < power.interval.high


def test_identical_continuous_laws_read_zero() -> None:
    values = np.random.default_rng(6).gamma(2.0, 5.0, 3000)
    assert epsilon_star(values, values.copy(), delta=1e-5, method=SHAPED).epsilon == 0.0
    found = []
    for seed in range(30):
        train, population = _gaussian(2000, 0.0, seed=100 + seed)
        result = epsilon_star(train, population, delta=1e-4, method=SHAPED, seed=seed)
        default = epsilon_star(train, population, delta=1e-4, method="tails-tested", seed=seed)
        assert result.leak_p_value == default.leak_p_value
        if result.epsilon > 0:
            assert default.epsilon > 0  # the same test decides both
        found.append(result.epsilon)
    assert np.mean(np.array(found) == 0.0) >= 0.85


@pytest.mark.parametrize("leak", [0.0, 0.15])
def test_discrete_losses_take_the_atoms_path_as_tails_tested_does(leak: float) -> None:
    rng = np.random.default_rng(7)
    levels = np.arange(5.0)
    train = rng.choice(levels, 3000, p=[0.2 + leak, 0.2, 0.2, 0.2, 0.2 - leak])
    population = rng.choice(levels, 3000, p=[0.2, 0.2, 0.2, 0.2, 0.2])
    if leak == 0.0:
        train = rng.permutation(population)  # the same values: nothing to tell apart
    shaped = epsilon_star(train, population, delta=1e-4, method=SHAPED, seed=1)
    default = epsilon_star(train, population, delta=1e-4, method="tails-tested", seed=1)
    assert shaped.method == default.method == "atoms-tested"
    assert shaped.to_dict() == default.to_dict()
    if leak == 0.0:
        assert shaped.epsilon == 0.0
    else:
        assert shaped.epsilon > 0.0


@settings(max_examples=8, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    mu=st.sampled_from([0.0, 0.3, 1.0]),
    scale=st.floats(0.01, 100.0),
    shift=st.floats(-100.0, 100.0),
    method=st.sampled_from(["tails-tested", SHAPED]),
)
def test_a_positive_affine_map_of_the_losses_changes_nothing(
    seed: int, mu: float, scale: float, shift: float, method: str
) -> None:
    # The default is the same on a * loss + b (a > 0), to rounding; not on every monotone map
    # (its generalised-Pareto tails are fitted on the losses' own scale), so neither is this.
    train, population = _gaussian(2500, mu, seed)
    plain = epsilon_star(train, population, delta=1e-5, method=method, seed=seed)  # type: ignore[arg-type]
    mapped = epsilon_star(
        scale * train + shift,
        scale * population + shift,
        delta=1e-5,
        method=method,  # type: ignore[arg-type]
        seed=seed,
    )
    assert mapped.leak_p_value == plain.leak_p_value
    assert mapped.epsilon == pytest.approx(plain.epsilon, rel=1e-6, abs=1e-9)
    assert mapped.note == plain.note


def test_summarised_losses_check_the_slope_on_their_random_samples() -> None:
    train, population = _gaussian(300_000, 0.5, seed=8)
    plans = SummaryPlan.for_rows(train.size, population.size, seed=0)
    summaries = summarise_losses(train, plans[0]), summarise_losses(population, plans[1])
    delta = 1e-6
    whole = epsilon_star(train, population, delta=delta, method=SHAPED)
    summarised = epsilon_star(*summaries, delta=delta, method=SHAPED)
    assert whole.note is not None
    assert summarised.note is not None
    assert "Gaussian-shift tails" in whole.note
    assert "Gaussian-shift tails" in summarised.note
    assert re.search(
        r"\(on the random samples of the summaries: \d{2,3},\d{3} of 300,000 training, "
        r"\d{2,3},\d{3} of 300,000 population losses\)",
        summarised.note,
    )
    assert "or the extremes a summary keeps" in summarised.note
    truth = parametric_supremum(stats.norm(0, 1), stats.norm(0.5, 1), delta).epsilon
    # Both fit the shift on at least 18,000 records a side (the summary on the extremes it
    # keeps, the whole losses on each end's half): at this size both lie within 0.1 of the
    # truth (2.29), which the power tails overshoot.
    assert abs(whole.epsilon - truth) < 0.1
    assert abs(summarised.epsilon - truth) < 0.1


def test_a_summary_whose_sample_is_every_loss_names_the_extremes_of_its_shift() -> None:
    train, population = _gaussian(20_000, 0.5, seed=12)
    plans = SummaryPlan.for_rows(train.size, population.size, seed=0)
    summaries = summarise_losses(train, plans[0]), summarise_losses(population, plans[1])
    found = epsilon_star(*summaries, delta=1e-5, method=SHAPED)
    assert found.note is not None
    assert "random samples" not in found.note  # 20,000 a side: the sample is every loss
    assert "Gaussian-shift tails" in found.note
    assert "or the extremes a summary keeps" in found.note


def test_its_options_are_checked_and_named_by_the_method() -> None:
    assert method_config(SHAPED, n_splits=2, tail_size=40) == TailsShapeTested(40, 2)
    assert TailsShapeTested.min_records == TailsTested.min_records
    with pytest.raises(InvalidInputError, match="level"):
        TailsShapeTested(level=1.5)
    with pytest.raises(InvalidInputError, match="tail_size"):
        TailsShapeTested(tail_size=2)


def test_without_the_untested_estimate_epsilon_is_the_same() -> None:
    for mu in (0.0, 0.5):
        train, population = _gaussian(4000, mu, seed=9)
        full = estimate(train, population, TailsShapeTested(), delta=1e-5, seed=1)
        fast = estimate(train, population, TailsShapeTested(untested=False), delta=1e-5, seed=1)
        assert fast.epsilon == full.epsilon
        assert fast.method == full.method == SHAPED


def test_its_interval_keeps_the_shape_and_the_tests_decision() -> None:
    train, population = _gaussian(4000, 0.5, seed=10)
    interval = Bootstrap(0.9, n_bootstrap=10)
    shaped = epsilon_star(train, population, delta=1e-5, method=SHAPED, interval=interval)
    default = epsilon_star(train, population, delta=1e-5, method="tails-tested", interval=interval)
    assert shaped.note is not None
    assert "Gaussian-shift tails" in shaped.note
    assert shaped.interval is not None
    assert default.interval is not None
    # The replicates are the binormal tails' estimates, below the power tails' here.
    assert shaped.interval.replicate_mean < default.interval.replicate_mean
    same = _gaussian(4000, 0.0, seed=11)
    nothing = epsilon_star(*same, delta=1e-5, method=SHAPED, interval=interval)
    if nothing.epsilon == 0.0:
        assert nothing.interval is not None
        assert nothing.interval.low == 0.0
