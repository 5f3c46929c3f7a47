"""How reports print numbers: rates near 1 as ``1 − gap``, lower-case exponents."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from epsstar.reports.numbers import RATE_GAP_TOLERANCE, count, counted, number, percent, rate


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (1 - 2.96e-06, "1 − 2.96e-06"),
        (0.99996, "1 − 4e-05"),
        (0.9986, "1 − 0.0014"),  # "0.999" would say the gap is 0.001
        (0.9975, "0.9975"),
        (0.5, "0.5"),
        (2.96e-06, "2.96e-06"),
        (0.0, "0"),
        (1.0, "1"),
        (None, "—"),
        (float("nan"), "—"),
    ],
)
def test_rates(value: float | None, shown: str) -> None:
    digits = 3 if value == 0.9986 else 4
    assert rate(value, digits) == shown


@given(st.floats(0.0, 1.0), st.integers(2, 6))
def test_a_printed_rate_keeps_its_distance_to_one(value: float, digits: int) -> None:
    """Read back, a printed rate keeps its gap to 1 (within the tolerance, or to 3 digits)."""
    shown = rate(value, digits)
    gap = 1.0 - value
    if shown.startswith("1 − "):
        assert value > 0.5
        assert float(shown.removeprefix("1 − ")) == pytest.approx(gap, rel=5e-3)
    else:
        read = float(shown)
        assert abs(read - value) <= 0.5 * 10 ** (math.floor(math.log10(value or 1)) - digits + 1)
        if value > 0.5:
            assert abs((1.0 - read) - gap) <= RATE_GAP_TOLERANCE * gap + 1e-15
    assert shown != "1" or value == 1.0
    assert "E" not in shown


def test_other_numbers() -> None:
    assert number(2.9556318103336777e-06, ".3g") == "2.96e-06"
    assert number([1.0, None]) == "[1, —]"
    assert number(float("inf")) == "∞"
    assert percent(0.961) == "96.1 %"
    assert count(32561) == "32,561"


def test_counts_agree_with_their_noun() -> None:
    assert counted(1, "false positive") == "1 false positive"
    assert counted(0, "false positive") == "0 false positives"
    assert counted(8141, "held-out non-member") == "8,141 held-out non-members"
    assert counted(1, "strategy", "strategies") == "1 strategy"
    assert counted(7, "strategy", "strategies") == "7 strategies"
    assert counted(None, "record") == "— records"
