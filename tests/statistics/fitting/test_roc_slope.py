"""The slope of the binormal ROC curve of all records, and its check for slope 1."""

from __future__ import annotations

import math

import numpy as np
import pytest

from epsstar.statistics.fitting.roc_slope import (
    SLOPE_MARGIN,
    RocSlope,
    fewest_records_a_side,
    roc_slope,
)


def test_the_gaussian_mechanism_has_slope_one() -> None:
    rng = np.random.default_rng(0)
    found = roc_slope(rng.normal(0.0, 1.0, 40_000), rng.normal(0.7, 1.0, 40_000))
    assert found.slope == pytest.approx(1.0, abs=0.02)
    assert found.standard_error == pytest.approx(math.sqrt(1 / 40_000))
    assert found.near_one


def test_unequal_spreads_have_the_ratio_of_their_scales() -> None:
    # N(0, 1) members against N(0.5, 1.5²): the population's normal scores on the members'
    # law have sd 1.5, so the slope is 1/1.5.
    rng = np.random.default_rng(1)
    found = roc_slope(rng.normal(0.0, 1.0, 40_000), rng.normal(0.5, 1.5, 40_000))
    assert found.slope == pytest.approx(1 / 1.5, abs=0.03)
    assert not found.near_one


def test_the_appendix_b_gamma_pairs_are_steeper() -> None:
    rng = np.random.default_rng(2)
    found = roc_slope(rng.gamma(2.0, 5.0, 10_000), rng.gamma(3.0, 5.0, 10_000))
    assert found.log_slope > SLOPE_MARGIN
    assert not found.near_one


def test_the_check_needs_its_margin_beyond_two_standard_errors() -> None:
    # At 1,600 records a side two standard errors are the whole margin.
    assert RocSlope(0.0, 0.0249).near_one
    assert not RocSlope(0.0, 0.025).near_one
    assert RocSlope(-0.02, 0.0149).near_one
    assert not RocSlope(0.03, 0.0101).near_one
    values = np.random.default_rng(3).normal(0.0, 1.0, 1500)
    assert not roc_slope(values, values.copy()).near_one
    assert not roc_slope(values, values.copy()).can_pass


def test_the_fewest_records_that_can_pass_are_the_first_above_the_bound() -> None:
    fewest = fewest_records_a_side()
    assert fewest == 1601  # (2 / 0.05)² = 1,600
    values = np.random.default_rng(4).normal(0.0, 1.0, fewest)
    assert roc_slope(values, values.copy()).can_pass
    assert not roc_slope(values[:-1], values[:-1].copy()).can_pass


def test_it_describes_the_slope_and_its_error() -> None:
    assert RocSlope(math.log(1.01), 0.02).describe() == (
        "slope of the binormal ROC curve 1.01 ± 0.02"
    )
