"""Numbers printed side by side agree or say why not in the same line, in the command line's
summary and in the HTML report alike; the report shows no fitted point when nothing was
fitted, and the levels it prints are the levels its tests used."""

from __future__ import annotations

import contextlib
import html
import io
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from epsstar.cli import main
from epsstar.cli.exit_codes import EXIT_OK

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "fixtures" / "models"
FEATURES = "x0,x1,x2,x3,x4,x5,x6,x7"


@dataclass(frozen=True)
class Run:
    """One audit of the binary MLP from the command line: what it printed, its report."""

    stdout: str
    page: str

    def line(self, start: str) -> str:
        """The one summary line that starts (after its indent) with ``start``."""
        (found,) = [line for line in self.stdout.splitlines() if line.strip().startswith(start)]
        return found

    def element(self, element_id: str) -> str:
        """The text of the HTML element ``element_id``, tags removed."""
        pattern = rf'<(\w+)[^>]*\bid="{element_id}"[^>]*>(.*?)</\1>'
        match = re.search(pattern, self.page, re.S)
        assert match is not None, element_id
        return html.unescape(re.sub(r"<[^>]+>", "", match.group(2)))


def _run(folder: Path, population: Path, *extra: str) -> Run:
    report = folder / "audit.html"
    argv = ["audit", str(MODELS / "binary_mlp.onnx"), "--train", str(MODELS / "binary_train.csv")]
    argv += ["--population", str(population), "--label-column", "label", "--features", FEATURES]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*argv, "--quiet", "--report", str(report), *extra])
    assert code == EXIT_OK
    return Run(out.getvalue(), report.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def tested(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The default method under a gate over two attacks: Epsilon* 0 (no leak found), the
    empirical Epsilon* 1.65, an observed advantage above the allowed one."""
    folder = tmp_path_factory.mktemp("tested")
    population = MODELS / "binary_population.csv"
    return _run(folder, population, "--max-epsilon", "5", "--attack", "loss", "qmia")


@pytest.fixture(scope="module")
def empirical(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The empirical method: nothing fitted; the blind baseline's Epsilon* is above 0."""
    folder = tmp_path_factory.mktemp("empirical")
    return _run(folder, MODELS / "binary_population.csv", "--method", "empirical")


def test_a_headline_of_0_says_why_the_empirical_epsilon_beside_it_is_higher(tested: Run) -> None:
    line = tested.line("lower bound")
    assert "Epsilon* = 0.0000" in tested.stdout
    assert re.search(r"empirical Epsilon\* [1-9]\.\d{4} \(the plain maximum", line)
    for shown in (tested.element("empirical-epsilon-star"), tested.element("headline-table")):
        assert "neither cross-fitted nor tested" in shown


def test_a_blind_baseline_above_0_beside_premise_holds_states_the_rule(empirical: Run) -> None:
    line = empirical.line("blind baseline")
    assert not re.search(r"Epsilon\* 0\.0000", line)
    assert "premise holds: no test flags the tables (4 tests each at level 0.0125" in line
    assert "the premise is read from these tests, not from the blind Epsilon*" in line
    reason = empirical.element("premise-reason")
    assert "not from the blind Epsilon*" in reason
    assert "0.0125" in reason


def test_an_observed_advantage_above_0_allowed_says_it_is_noise_in_the_same_line(
    tested: Run,
) -> None:
    line = tested.line("at (Epsilon*, delta)")
    observed, allowed = re.findall(r"observed (\d\.\d{4}) \(allowed (\d\.\d{4})", line)[0]
    assert float(observed) > float(allowed)
    assert "above it by no more than sampling noise at 95%, where an advantage up to" in line
    assert "by no more than sampling noise at 95%" in tested.element("advantage-reason")


def test_the_report_shows_a_fitted_point_only_when_one_was_fitted(
    tested: Run, empirical: Run, tmp_path: Path
) -> None:
    assert "Epsilon* (fitted)" not in empirical.element("tradeoff-table")
    assert "Epsilon* (fitted)" not in tested.element("tradeoff-table")  # its 0 was not fitted
    fitted = _run(tmp_path, MODELS / "binary_population.csv", "--method", "tails-crossfit")
    assert "Epsilon* (fitted)" in fitted.element("tradeoff-table")


def test_the_levels_printed_are_the_levels_used(tested: Run, tmp_path: Path) -> None:
    note = tested.line("note:")
    assert "found no leak (p = " in note
    assert note.endswith("the gate reads each of 2 attacks' leak tests at level 0.025")
    assert "each of 2 attacks' leak tests at level 0.025" in tested.element("estimator-note")
    assert "better than chance (at level 0.05)" in tested.page
    strict = _run(tmp_path, MODELS / "binary_population.csv", "--confidence", "0.99")
    assert "better than chance (at level 0.01)" in strict.page
    assert "level 0.05" not in strict.page


def test_a_failed_premise_names_the_test_that_flags_it(tmp_path: Path) -> None:
    frame = pd.read_csv(MODELS / "binary_population.csv")
    frame["x0"] = frame["x0"] + 1.5 * frame["x0"].std()
    shifted = tmp_path / "population.csv"
    frame.to_csv(shifted, index=False)
    run = _run(tmp_path, shifted)
    line = run.line("blind baseline")
    assert re.search(r"premise FAILS: flagged by the [a-z ,-]+ tests?$", line)
    assert "Flagged by the blind lower bound" in run.element("premise-reason")


def test_the_summary_and_the_report_give_one_reason_beside_a_leak_test_finding_none(
    tmp_path: Path,
) -> None:
    run = _run(
        tmp_path,
        MODELS / "binary_population.csv",
        *("--method", "empirical", "--max-epsilon", "5"),
    )
    line = run.line("gate (")
    assert "finds no leak at level 0.05; " in line
    reason = line.split("finds no leak at level 0.05; ", 1)[1]
    assert reason.startswith("the empirical estimate is not held to this test")
    assert run.element("leak-test").endswith(f"; {reason}")


@pytest.mark.parametrize(
    "method", ["parametric", "empirical", "tails-shape-tested", "atoms-tested"]
)
def test_a_headline_is_called_fitted_exactly_when_its_method_fits(method: str) -> None:
    """The report's "Epsilon* (fitted)" row and the reasons beside the headline follow the
    methods that fit a distribution or tails: every tails method (the newest too) and the
    paper's, never the empirical or atoms estimates."""
    import numpy as np

    from epsstar.audit.side_by_side import fitted_headline
    from epsstar.statistics.estimators.estimator import epsilon_star
    from epsstar.statistics.names import TAIL_METHODS

    rng = np.random.default_rng(0)
    train, population = rng.normal(0.0, 1.0, 4000), rng.normal(1.0, 1.0, 4000)
    result = epsilon_star(train, population, delta=1e-4, method=method, seed=1)
    assert result.epsilon > 0
    assert fitted_headline(result) == (method == "parametric" or method in TAIL_METHODS)
