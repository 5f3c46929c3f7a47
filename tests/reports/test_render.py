"""The single-model HTML report: contents, self-containment, escaping, size budget."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from epsstar.audit.result import AuditResult
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
    assert 'id="ks-grid-train"' in html
    assert 'id="ks-grid-population"' in html
    assert result.provenance["model_sha256"] in html
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
    from epsstar.audit.figures import audit_figures
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
