"""A tailed fit refuses a sample whose body between the two tails is a single value."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from epsstar.exceptions import InsufficientDataError
from epsstar.statistics.fitting.tails import TailedEmpirical, fit_relative_tails


def test_a_single_valued_body_is_refused() -> None:
    # k = 5: the 5 lowest and 5 highest values are tails; all 90 values between them are 1.0,
    # so the largest of the 6 lowest equals the smallest of the 6 highest
    values = np.concatenate([np.linspace(-2.0, -1.0, 5), np.ones(90), np.linspace(2.0, 3.0, 5)])
    with pytest.raises(InsufficientDataError, match=r"single value.* Found 1\.0\.$"):
        TailedEmpirical.fit(values, tail_size=5)


def test_logcdf_in_the_body_is_silent_and_matches_the_cdf() -> None:
    values = np.random.default_rng(6).normal(0.0, 1.0, 400)
    fit = TailedEmpirical.fit(values)
    points = np.array([-0.5, 0.0, 0.7])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the upper tail's log1p(−1) off the tail must not warn
        logs = fit.logcdf(points)
    # 1e-12 relative: log of the same interpolated levels
    assert np.allclose(logs, np.log(fit.cdf(points)), rtol=1e-12, atol=0)


def test_relative_tails_logcdf_is_silent_far_out() -> None:
    rng = np.random.default_rng(6)
    _, population = fit_relative_tails(rng.normal(0.0, 1.0, 400), rng.normal(0.5, 1.0, 400))
    points = np.linspace(-10.0, 10.0, 41)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # log1p(−1) beyond the upper tail's end must not warn
        logs = population.logcdf(points)
    assert np.all(logs <= 0.0)
    assert logs[-1] == 0.0  # past the largest value, P(X ≤ x) = 1
