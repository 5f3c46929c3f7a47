"""The single-model HTML report: contents, self-containment, escaping, size budget."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from epsstar.audit.output.result import AuditResult
from epsstar.reports import MAX_REPORT_BYTES, render

Synthetic = Callable[..., AuditResult]

#: A reference to anything outside the file: a URL scheme or a protocol-relative address.
EXTERNAL = re.compile(r"""(?:src|href|action|xlink:href)\s*=\s*["']?\s*(?:[a-z]+:|//)""", re.I)


def assert_self_contained(html: str) -> None:
    assert not EXTERNAL.search(html), EXTERNAL.search(html)
    for needle in ("http://", "https://", "<script src", "<link", "@import", "url(//"):
        assert needle not in html.lower()


@pytest.mark.parametrize("name", ["binary_result", "multiclass_result"])
def test_report_of_fixture_models(
    name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    result: AuditResult = request.getfixturevalue(name)
    path = render(result, tmp_path / "report.html")
    html = path.read_text(encoding="utf-8")
    assert_self_contained(html)
    star = re.search(r'data-epsilon-star="([^"]+)"', html)
    assert star is not None
    assert float(star.group(1)) == result.epsilon_star
    assert html.count("<svg") == 3
    for section in ("verdict", "readings", "losses", "tradeoff", "fit", "utility", "provenance"):
        assert f'id="{section}"' in html
    for table in ("headline", "readings", "tradeoff", "fit", "utility", "provenance"):
        assert f'id="{table}-table"' in html
    assert 'id="attacks-table"' not in html  # the loss attack alone: its figures are above
    assert 'id="fig-attacks"' not in html
    assert 'id="ks-grid-train"' in html
    assert 'id="ks-grid-population"' in html
    assert result.provenance.model_sha256 in html
    assert "not supported by the data (extrapolated)" in html
    assert f"{result.lower_bound.epsilon:.4f}" in html
    assert f"{result.readings.advantage_observed:.4f}" in html
    assert list(tmp_path.iterdir()) == [path]  # written atomically, no temporary left


def test_verdicts(
    binary_result: AuditResult,
    multiclass_result: AuditResult,
    make_synthetic: Synthetic,
    tmp_path: Path,
) -> None:
    assert binary_result.passed is True
    assert multiclass_result.passed is False
    passed = render(binary_result, tmp_path / "a.html", ks_components=()).read_text("utf-8")
    failed = render(multiclass_result, tmp_path / "b.html", ks_components=()).read_text("utf-8")
    assert 'class="badge pass">PASS<' in passed
    assert 'class="badge fail">FAIL<' in failed
    assert "ks-grid" not in passed  # the grid can be left out
    ungated = render(make_synthetic(500), tmp_path / "c.html", ks_components=())
    assert 'class="badge none">NO GATE<' in ungated.read_text("utf-8")


def test_input_warnings_are_shown_with_the_gate_they_fail(
    binary_result: AuditResult, tmp_path: Path
) -> None:
    import dataclasses

    assert binary_result.passed is True
    clean = dataclasses.replace(binary_result, warnings=())
    plain = render(clean, tmp_path / "a.html", ks_components=()).read_text("utf-8")
    assert 'id="input-warnings"' not in plain
    line = "600 of the 1,000 population rows (60.0%) also occur in the training data"
    warned = dataclasses.replace(binary_result, warnings=(line,), gate_blocked=True)
    assert warned.passed is False
    html = render(warned, tmp_path / "b.html", ks_components=()).read_text("utf-8")
    assert 'id="input-warnings"' in html
    assert f"<li>{line}</li>" in html
    assert "The release gate fails because of them" in html
    assert 'class="badge fail">FAIL<' in html
    mixed = dataclasses.replace(binary_result, warnings=("class 1 makes up …",))
    html = render(mixed, tmp_path / "c.html", ks_components=()).read_text("utf-8")
    assert "<li>class 1 makes up …</li>" in html
    assert "The release gate fails because of them" not in html
    assert 'class="badge pass">PASS<' in html


def test_mixture_fits_render(make_audit: Synthetic, tmp_path: Path) -> None:
    result = make_audit("binary", family="gmm")
    html = render(result, tmp_path / "gmm.html", ks_components=(1, 2)).read_text("utf-8")
    assert "gmm fit" in html
    assert "weights = [" in html


def test_other_estimators_and_the_interval_render(tmp_path: Path) -> None:
    from tests.reports.conftest import audit_fixture

    tails = audit_fixture("multiclass", method="tails", interval=0.9, n_bootstrap=20)
    html = render(tails, tmp_path / "tails.html").read_text("utf-8")
    assert_self_contained(html)
    assert 'id="tail-fit-table"' in html
    assert 'id="fit-table"' not in html
    assert "generalised-Pareto tails fitted beyond the most extreme records" in html
    interval = tails.epsilon.interval
    assert interval is not None
    assert 'id="epsilon-star-interval"' in html
    assert 'id="interval-row"' in html
    assert f"[{interval.low:.4f}, {interval.high:.4f}]" in html
    assert "tails estimate, attained by" in html
    # what the interval does not carry depends on whether Epsilon* is read beyond the data
    text = " ".join(html.split())
    carries_tail_error = "not the error of the tail's shape beyond the data" in text
    assert carries_tail_error == tails.epsilon.tail_extrapolated
    assert ("not the error of the extrapolated tail" in html) == tails.epsilon.tail_extrapolated
    assert ("sampling spread of the estimate, not a guaranteed bound" in html) != (
        tails.epsilon.tail_extrapolated
    )
    assert html.count("<svg") == 2  # no transformed losses: the method fits no transform

    empirical = audit_fixture("binary", method="empirical")
    html = render(empirical, tmp_path / "empirical.html").read_text("utf-8")
    assert "fits no distribution: it uses the observed losses only" in html
    assert 'id="epsilon-star-interval"' not in html


def test_the_estimator_note_is_shown(binary_result: AuditResult, tmp_path: Path) -> None:
    import dataclasses

    note = "the train losses take 2 distinct values among 600 <saturated>"
    noted = dataclasses.replace(
        binary_result, epsilon=dataclasses.replace(binary_result.epsilon, note=note)
    )
    html = render(noted, tmp_path / "note.html", ks_components=()).read_text("utf-8")
    assert 'id="estimator-note"' in html
    assert "take 2 distinct values among 600 &lt;saturated&gt;" in html
    plain = render(binary_result, tmp_path / "plain.html", ks_components=()).read_text("utf-8")
    assert 'id="estimator-note"' not in plain


def test_text_is_escaped(make_synthetic: Synthetic, tmp_path: Path) -> None:
    html = render(make_synthetic(500), tmp_path / "r.html", ks_components=()).read_text("utf-8")
    assert "synthetic &lt;model&gt;.onnx" in html
    assert "<model>" not in html


def test_poor_fits_are_highlighted(make_synthetic: Synthetic, tmp_path: Path) -> None:
    result = make_synthetic(50_000)
    assert result.epsilon.poor_fit
    html = render(result, tmp_path / "r.html").read_text("utf-8")
    assert "Poor fit." in html
    assert re.search(r'<td class="num reject">0\.0', html)
    assert "2,000 values" in html  # the grid's subsample is stated


def test_size_does_not_grow_with_records(make_synthetic: Synthetic, tmp_path: Path) -> None:
    small = render(make_synthetic(1_000), tmp_path / "small.html", ks_components=(1,))
    large = render(make_synthetic(1_000_000), tmp_path / "large.html", ks_components=(1,))
    assert large.stat().st_size <= MAX_REPORT_BYTES
    assert large.stat().st_size < 1.2 * small.stat().st_size


def test_audit_command_writes_report(audit_arguments: list[str], tmp_path: Path) -> None:
    from epsstar.cli import main

    out = tmp_path / "audit.html"
    json_out = str(tmp_path / "a.json")
    assert main([*audit_arguments, "--json", json_out, "--report", str(out)]) == 0
    assert 'data-epsilon-star="' in out.read_text("utf-8")
    assert main([*audit_arguments, "--report", str(tmp_path / "missing" / "a.html")]) == 0
    assert (tmp_path / "missing" / "a.html").is_file()  # missing folders are made
    assert main([*audit_arguments, "--report", str(tmp_path / "a.json" / "a.html")]) == 2


def test_render_draws_given_figures(make_synthetic: Synthetic, tmp_path: Path) -> None:
    from epsstar.audit.output.figures import audit_figures
    from epsstar.exceptions import InvalidInputError

    result = make_synthetic(2_000)
    figures = audit_figures(result, ks_components=(1, 2), ks_sample_sizes=(100,))
    given = render(result, tmp_path / "given.html", figures=figures).read_text("utf-8")
    built = render(
        result, tmp_path / "built.html", ks_components=(1, 2), ks_sample_sizes=(100,)
    ).read_text("utf-8")
    assert given == built
    assert 'id="ks-grid-train"' in given
    with pytest.raises(InvalidInputError, match="Found ks_components"):
        render(result, tmp_path / "both.html", figures=figures, ks_components=())
    assert not (tmp_path / "both.html").exists()


def test_reports_import_nothing_that_computes() -> None:
    """Every number comes from epsstar.audit's records: no statistics, no fitting library."""
    import ast

    import epsstar.reports

    computing = ("epsstar.statistics", "scipy", "sklearn", "statsmodels", "threadpoolctl")
    folder = Path(epsstar.reports.__file__).parent
    for source in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert not name.startswith(computing), f"{source.name} imports {name}"


def _svg(html: str, title: str) -> str:
    """The inline SVG chart whose accessible name is ``title``."""
    match = re.search(rf'<svg [^>]*aria-label="{re.escape(title)}">.*?</svg>', html, re.S)
    assert match is not None, title
    return match.group(0)


def _points(svg: str, css: str) -> np.ndarray:
    match = re.search(rf'<polyline class="{css}" fill="none" points="([^"]+)"', svg)
    assert match is not None, css
    return np.array([[float(v) for v in p.split(",")] for p in match.group(1).split()])


TRADEOFF = "Trade-off between false positives and false negatives"


def test_the_tradeoff_chart_draws_the_no_leak_line_and_the_boundary_on_top(
    make_synthetic: Synthetic, tmp_path: Path
) -> None:
    from epsstar.audit.output.figures import audit_figures

    result = make_synthetic(2_000)
    figures = audit_figures(result, ks_components=())
    html = render(result, tmp_path / "r.html", figures=figures).read_text("utf-8")
    svg = _svg(html, TRADEOFF)
    # FNR = 1 − FPR on log-odds axes of equal range: a straight line whose slope in pixels is
    # the plot's height over its width (down to the right), through (0.5, 0.5), which sits
    # at the share u = −logit(low) / (logit(high) − logit(low)) of both axes.
    frame = re.search(r'<rect class="frame" x="(\S+)" y="(\S+)" width="(\S+)" height="(\S+)"', svg)
    assert frame is not None
    left, top, width, height = (float(v) for v in frame.groups())
    points = _points(svg, "no-leak")
    slope, intercept = np.polyfit(points[:, 0], points[:, 1], 1)
    assert slope == pytest.approx(height / width, rel=1e-3)
    assert np.abs(points[:, 1] - (slope * points[:, 0] + intercept)).max() < 0.2  # pixels
    low, high = figures.tradeoff.axis
    logit_low, logit_high = math.log(low / (1 - low)), math.log(high / (1 - high))
    u = -logit_low / (logit_high - logit_low)
    assert slope * (left + u * width) + intercept == pytest.approx(top + (1 - u) * height, abs=0.3)
    # Drawn under the μ-GDP curve, which lies under the boundary.
    order = [svg.index(f'<polyline class="{css}"') for css in ("no-leak", "gdp", "dp-boundary")]
    assert order == sorted(order)
    assert svg.index('<polyline class="dp-boundary"') < svg.index('<circle class="point-star"')
    assert '<circle class="point-corner"' in svg
    corner = figures.tradeoff.boundary_corner.fpr
    caption = html[html.index('<figure id="fig-tradeoff">') : html.index('id="tradeoff-table"')]
    caption = caption[caption.index("<figcaption>") :]
    assert "<strong>Grey line:</strong> no leak\n(FNR = 1 − FPR)" in caption
    assert "top left\nto the bottom right through (0.5, 0.5)" in caption
    # The caption proper is short; the details of reading the chart are folded away.
    short = caption[: caption.index("<details")]
    assert len(re.sub(r"<[^>]+>", "", short)) < 900
    assert f"(1 − δ)/(1 + e<sup>ε*</sup>) = {corner:.3g}" in caption
    assert "(top right)" not in caption  # the no-leak line never was there


def test_rates_near_one_are_not_rounded_to_one(make_synthetic: Synthetic, tmp_path: Path) -> None:
    import dataclasses

    result = make_synthetic(2_000)
    near_one = dataclasses.replace(result.epsilon, fpr=1 - 2.96e-06, fnr=3.1e-05)
    html = render(
        dataclasses.replace(result, epsilon=near_one), tmp_path / "r.html", ks_components=()
    ).read_text("utf-8")
    assert '<td class="num">1 − 2.96e-06 / 3.1e-05</td>' in html  # headline table
    assert '<td class="num">1 − 2.96e-06</td>' in html  # trade-off table
    assert not re.search(r"FPR 1(?! −)|>1 /", html)


def test_no_upper_case_exponents_and_delta_is_greek(
    make_synthetic: Synthetic, tmp_path: Path
) -> None:
    result = make_synthetic(2_000)
    html = render(result, tmp_path / "r.html", ks_components=()).read_text("utf-8")
    delta = f"{result.delta:.3g}"
    assert "e-05" in delta
    assert f'<div class="label">Epsilon* (δ = {delta})</div>' in html
    assert "text-transform" not in html
    assert not re.search(r"\dE[-+]?\d", html)


def _columns(html: str, table: str) -> list[list[str]]:
    """Header and cell texts of each row of the table with this id."""
    start = html.index(f'<table id="{table}">')
    body = html[start : html.index("</table>", start)]
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    return [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S) for row in rows]


def test_columns_empty_in_every_row_are_left_out(make_synthetic: Synthetic, tmp_path: Path) -> None:
    import dataclasses

    result = make_synthetic(2_000)
    readings = result.readings
    assert all(t.tpr_fitted is not None for t in readings.tpr_at_fpr)
    html = render(result, tmp_path / "a.html", ks_components=()).read_text("utf-8")
    assert "fitted" in _columns(html, "readings-table")[0]
    assert "note" not in _columns(html, "utility-table")[0]
    unfitted = dataclasses.replace(
        readings,
        tpr_at_fpr=tuple(dataclasses.replace(t, tpr_fitted=None) for t in readings.tpr_at_fpr),
    )
    population = dataclasses.replace(result.utility["population"], auroc_note="one class only")
    other = dataclasses.replace(
        result, readings=unfitted, utility={**result.utility, "population": population}
    )
    html = render(other, tmp_path / "b.html", ks_components=()).read_text("utf-8")
    for table, column, present in (
        ("readings-table", "fitted", False),
        ("utility-table", "note", True),
    ):
        rows = _columns(html, table)
        assert (column in rows[0]) is present
        assert {len(row) for row in rows} == {len(rows[0])}  # every row has every column
    assert "one class only" in html


def test_losses_at_the_clip_value_are_explained(make_synthetic: Synthetic, tmp_path: Path) -> None:
    import dataclasses

    from epsstar.statistics.losses import MAX_ABS_LOGIT

    result = make_synthetic(2_000)
    train, population = result.train_losses - 5.0, result.population_losses - 5.0
    train[:150], population[:30] = -MAX_ABS_LOGIT, -MAX_ABS_LOGIT
    clipped = dataclasses.replace(result, train_losses=train, population_losses=population)
    html = render(clipped, tmp_path / "r.html", ks_components=()).read_text("utf-8")
    nearest = np.concatenate([train[150:], population[30:]]).min()
    assert "<strong>150 training and 30\npopulation losses equal -36.04</strong>" in html
    assert "probability of 1 to float64 precision" in html
    assert f"no loss\nlies between -36.04 and {nearest:.4g}" in html
    assert "clipped probabilities (loss -36.04)" in _svg(
        html, "Losses of training and population records"
    )
    plain = render(result, tmp_path / "plain.html", ks_components=()).read_text("utf-8")
    assert 'class="clipped-losses"' not in plain


def test_charts_scale_to_the_page_width(make_synthetic: Synthetic, tmp_path: Path) -> None:
    html = render(make_synthetic(500), tmp_path / "r.html", ks_components=()).read_text("utf-8")
    assert "svg.chart { width: 100%;" in html
    for width in re.findall(r'<svg class="chart" viewBox="0 0 (\d+) \d+"', html):
        assert int(width) >= 900  # drawn for about the page's width, so text keeps its size


def test_the_report_shows_the_gate_the_delta_profile_and_the_four_corners(
    multiclass_result: AuditResult, tmp_path: Path
) -> None:
    html = render(multiclass_result, tmp_path / "report.html").read_text(encoding="utf-8")
    gate = multiclass_result.gate
    assert gate is not None
    assert 'id="leak-test"' in html
    assert f"({gate.rule}: {gate.value:.4f})" in html
    assert 'id="by-delta"' in html
    rows = re.findall(r"<tr(?: class=\"extrapolated\")?><td class=\"num\">", html)
    assert len(rows) >= len(multiclass_result.delta_profile)
    # One grey region per corner: FPR, FNR, 1 - FPR, 1 - FNR.
    for corner in ("FPR below", "FNR below", "1 − FPR below", "1 − FNR below"):
        assert corner in html
    assert "declared-privacy" not in html  # the fixture model declares nothing


@pytest.mark.parametrize(
    ("epsilon", "shown"),
    [(50.0, "is within it"), (0.01, "estimation error"), (None, "without differential privacy")],
)
def test_a_declared_guarantee_is_shown_beside_epsilon_star(
    multiclass_result: AuditResult, tmp_path: Path, epsilon: float | None, shown: str
) -> None:
    import dataclasses

    from epsstar.audit.model.declared_privacy import DeclaredPrivacy

    declared = (
        DeclaredPrivacy(private=False)
        if epsilon is None
        else DeclaredPrivacy(True, epsilon=epsilon, delta=1e-6, accountant="pld")
    )
    result = dataclasses.replace(multiclass_result, declared_privacy=declared)
    html = render(result, tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'id="declared-privacy"' in html
    assert shown in html


def test_a_summarised_audit_says_what_its_charts_draw(
    audit_arguments: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from epsstar.cli import main

    monkeypatch.setattr("epsstar.audit.data.summary_plans.EXACT_ROWS", 300)
    monkeypatch.setattr("epsstar.statistics.summaries.loss_summary.SAMPLE_SIZE", 200)
    monkeypatch.setattr("epsstar.statistics.summaries.loss_summary.EXACT_TAIL_FACTOR", 2)
    out = tmp_path / "audit.html"
    assert main([*audit_arguments, "--report", str(out)]) == 0
    html = out.read_text("utf-8")
    assert_self_contained(html)
    row = re.search(r'<tr id="summaries">.*?</tr>', html)
    assert row is not None
    assert "the 192 smallest and largest losses exact" in row.group(0)
    assert "from a random 33.3 % of them" in row.group(0)  # 200 of the 600 training rows
    assert "Shared rows counted on a random" not in row.group(0)  # every row compared
    assert html.count('class="sampled-note"') == 2  # the losses and the trade-off charts
    assert "losses summarised: training (600 rows) and population (400 rows)" in (
        capsys.readouterr().out.replace("\n", " ")
    )


def test_report_text_reads_as_sentences(make_synthetic: Synthetic, tmp_path: Path) -> None:
    """Counts agree with their nouns, a note starts with a capital, the verdict cards fill
    their rows, and the report's own figures of Epsilon* are printed alike."""
    import dataclasses

    result = make_synthetic(2_000)
    lower = dataclasses.replace(result.lower_bound, false_positives=1)
    noted = dataclasses.replace(result.epsilon, note="the held-out exact leak test found no leak")
    html = render(
        dataclasses.replace(result, lower_bound=lower, epsilon=noted),
        tmp_path / "r.html",
        ks_components=(),
    ).read_text("utf-8")
    assert "from 1 false positive of " in html
    assert "<strong>Estimator.</strong> The held-out exact leak test" in html
    cards = 4 if result.blind_baseline else 3
    assert f'<div class="verdict cards-{cards}">' in html
    assert f'<td class="num">{result.epsilon_star:.4f}</td>' in html
    assert f"{result.epsilon_star:.6g}" not in html.replace(f"{result.epsilon_star:.4f}", "")


def test_gaussian_shift_tails_render_their_shifts(tmp_path: Path) -> None:
    from epsstar.audit.attacks.from_losses import audit_losses
    from epsstar.statistics.utility import Utility
    from tests.reports.conftest import made_up_provenance

    rng = np.random.default_rng(3)
    train, population = rng.normal(0.0, 1.0, 10_000), rng.normal(0.5, 1.0, 10_000)
    result = audit_losses(
        train,
        population,
        utility={"population": Utility(10_000, 0.8, 0.85)},
        provenance=made_up_provenance(10_000, 10_000, seed=3),
    )
    assert result.epsilon.tail_fits["train"]["family"] == "binormal-tails"
    html = render(result, tmp_path / "shift.html", ks_components=()).read_text("utf-8")
    assert_self_contained(html)
    assert "the equal-variance binormal ROC curve" in html
    table = html[html.index('id="tail-fit-table"') :]
    table = table[: table.index("</table>")]
    assert '<th class="num">lower shift</th>' in table
    assert "exponent" not in table
    shifts = [
        result.epsilon.tail_fits[side][end]["shift"]
        for side in ("train", "population")
        for end in ("lower_tail", "upper_tail")
    ]
    assert sorted(shifts)[:2] == [0.0, 0.0]  # the reaching side's own power tail, per end
    assert all(f"{shift:.4g}" in table for shift in shifts)
    # the population's lower tail and the members' upper tail are shifted by about 0.5
    assert all(0.35 < shift < 0.65 for shift in sorted(shifts)[2:])
