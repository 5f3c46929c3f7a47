"""Unrefutable claims: the one-line error names what was counted and the claim."""

from __future__ import annotations

import pytest

from epsstar.exceptions import InvalidInputError
from epsstar.statistics.auditing.feasibility import (
    MANY_RUN_FEASIBILITY_METHODS,
    ManyRunMethod,
    smallest_canary_count,
    smallest_run_count,
)


@pytest.mark.parametrize("method", MANY_RUN_FEASIBILITY_METHODS)
def test_no_run_count_refutes_a_huge_claim(method: ManyRunMethod) -> None:
    # ε = 500: e^ε overflows every Clopper–Pearson or μ bound within 2⁴⁰ runs
    with pytest.raises(InvalidInputError, match=r"number of runs .* Found ε = 500, δ = 1e-05\.$"):
        smallest_run_count(500.0, 1e-5, method=method)


def test_no_canary_count_refutes_when_delta_is_large() -> None:
    # 2δ(1 + e^ε) = 1.49 > 1 − confidence: the (ε, δ) bound can never exceed ε = 1
    with pytest.raises(InvalidInputError, match=r"number of canaries .* Found ε = 1, δ = 0\.2\.$"):
        smallest_canary_count(1.0, 0.2)
