"""The mutant sample and the score it estimates (tests/mutation_sample.py)."""

from __future__ import annotations

import io
import sys

import pytest
from scipy import stats

from tests import mutation_sample

RESULTS = "\n".join(
    [f"    epsstar.statistics.a.x_f__mutmut_{i}: killed" for i in range(1, 7)]
    + [f"    epsstar.statistics.a.x_f__mutmut_{i}: survived" for i in range(7, 9)]
    + [f"    epsstar.statistics.b.x_g__mutmut_{i}: not checked" for i in range(1, 5)]
    + ["    epsstar.training.clipping.x_h__mutmut_1: killed"]
)


def test_the_sample_depends_on_the_list_and_the_seed_only() -> None:
    names = [f"m{i}" for i in range(100)]
    first = mutation_sample.draw(names, 10, seed=3)
    assert first == mutation_sample.draw(list(reversed(names)), 10, seed=3)
    assert first != mutation_sample.draw(names, 10, seed=4)
    assert len(set(first)) == 10
    assert set(first) <= set(names)
    assert mutation_sample.draw(names[:5], 10, seed=3) == names[:5]


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (271, 400)])
def test_the_interval_is_clopper_pearson(k: int, n: int) -> None:
    # Against the beta quantiles written out (Clopper & Pearson 1934); 1e-9 guards the
    # choice of statsmodels' method, not floating-point detail.
    low, high = mutation_sample.clopper_pearson(k, n)
    expected_low = 0.0 if k == 0 else stats.beta.ppf(0.025, k, n - k + 1)
    expected_high = 1.0 if k == n else stats.beta.ppf(0.975, k + 1, n - k)
    assert low == pytest.approx(expected_low, abs=1e-9)
    assert high == pytest.approx(expected_high, abs=1e-9)


def test_commands_read_mutmut_results(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(RESULTS))
    mutation_sample.main(["sample", "--size", "12", "--seed", "0"])
    printed = capsys.readouterr().out.split()
    assert printed == [f"epsstar.statistics.b.x_g__mutmut_{i}" for i in range(1, 5)]
    monkeypatch.setattr(sys, "stdin", io.StringIO(RESULTS))
    mutation_sample.main(
        ["score", "--size", "12", "--seed", "0", "--exclude", "epsstar.statistics.b"]
    )
    out = capsys.readouterr().out
    assert "population 8 mutants, sample 8" in out
    assert "killed 6 of 8 run: 75.0%" in out
