"""Reports in a real browser: headless Chromium opens each file from a file:// URL.

Checks that nothing but the file itself is requested, that the console stays
clean, that every chart is drawn, and that the Epsilon* on the page is the one in
the JSON. Screenshots are saved beside the reports in the test's temporary folder or,
for people to look at (CI artifacts), in ``$EPSSTAR_TEST_ARTIFACTS/reports/`` when that
environment variable names a folder. Skipped, with the reason, when Playwright or
Chromium is missing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from epsstar.audit.output.result import AuditResult
from epsstar.reports import render, render_landscape

CHROMIUM = Path("/usr/bin/chromium")

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the Python package 'playwright' is not installed"
)
if not CHROMIUM.exists():
    pytest.skip(f"Chromium is not installed at {CHROMIUM}", allow_module_level=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--no-first-run",
            ],
        )
        yield launched
        launched.close()


def open_page(browser: Any, path: Path) -> tuple[Any, list[str], list[str]]:
    """Load ``path``; return the page, the URLs it requested and its console errors."""
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda request: requests.append(request.url))

    def console(message: Any) -> None:
        if message.type in ("error", "warning"):
            errors.append(f"{message.type}: {message.text}")

    page.on("console", console)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(path.resolve().as_uri())
    page.wait_for_load_state("load")
    return page, requests, errors


def screenshot_folder(report: Path) -> Path:
    """``$EPSSTAR_TEST_ARTIFACTS/reports`` when that variable is set, else the report's folder."""
    artifacts = os.environ.get("EPSSTAR_TEST_ARTIFACTS")
    if not artifacts:
        return report.parent
    folder = Path(artifacts) / "reports"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def check_page(browser: Any, path: Path, n_charts: int) -> Any:
    page, requests, errors = open_page(browser, path)
    assert requests == [path.resolve().as_uri()]
    assert errors == []
    charts = page.locator("svg")
    assert charts.count() == n_charts
    for index in range(n_charts):
        chart = charts.nth(index)
        box = chart.bounding_box()
        assert box is not None
        assert box["width"] > 100
        assert box["height"] > 100
        drawn = chart.locator("polyline, path, circle, line:not(.grid)").count()
        assert drawn > 0, f"chart {index} of {path.name} draws nothing"
    page.screenshot(path=str(screenshot_folder(path) / f"{path.stem}.png"), full_page=True)
    return page


@pytest.mark.parametrize("name", ["binary_result", "multiclass_result"])
def test_report_in_browser(
    name: str, request: pytest.FixtureRequest, browser: Any, tmp_path: Path
) -> None:
    result: AuditResult = request.getfixturevalue(name)
    path = render(result, tmp_path / f"report-{name.removesuffix('_result')}.html")
    page = check_page(browser, path, n_charts=3)
    expected = json.loads(json.dumps(result.to_dict()))["epsilon_star"]
    shown = page.locator("#epsilon-star")
    assert float(shown.get_attribute("data-epsilon-star")) == expected
    assert shown.inner_text() == f"{expected:.4f}"
    section = page.locator("#tradeoff").bounding_box()
    for chart in ("#fig-losses svg", "#fig-tradeoff svg"):  # the charts fill the page's width
        assert page.locator(chart).bounding_box()["width"] >= 0.97 * section["width"]
    page.close()


def test_tails_report_with_interval_in_browser(browser: Any, tmp_path: Path) -> None:
    from tests.reports.conftest import audit_fixture

    result = audit_fixture("multiclass", method="tails", interval=0.9, n_bootstrap=20)
    path = render(result, tmp_path / "report-tails-interval.html")
    page = check_page(browser, path, n_charts=2)  # no transformed losses without a transform
    interval = result.epsilon.interval
    assert interval is not None
    shown = page.locator("#epsilon-star-interval").inner_text()
    assert f"[{interval.low:.4f}, {interval.high:.4f}]" in shown
    assert page.locator("#tail-fit-table tr").count() == 3
    page.close()


def test_attack_curves_in_browser(
    browser: Any, make_synthetic: Callable[..., AuditResult], tmp_path: Path
) -> None:
    """The attacks' ROC chart fills the page's width at screen and print widths, and each
    attack's line is drawn inside the plot (at the print width too)."""
    from tests.reports.test_attack_curves import scores, with_attacks

    pairs = {"loss": scores(1, 500, 500, 0.5), "lira": scores(2, 500, 500, 1.5)}
    result = with_attacks(make_synthetic(1_000), pairs, {"loss": 1.0, "lira": 2.0})
    path = render(result, tmp_path / "report-attacks.html", ks_components=())
    page = check_page(browser, path, n_charts=4)
    for width in (1280, 794):
        page.set_viewport_size({"width": width, "height": 900})
        chart = page.locator("#fig-attacks svg").bounding_box()
        assert chart["width"] >= 0.97 * page.locator("#readings").bounding_box()["width"]
        frame = page.locator("#fig-attacks svg .frame").bounding_box()
        box = "element => { const b = element.getBBox(); return [b.x, b.width]; }"
        frame_x, frame_width = page.locator("#fig-attacks svg .frame").evaluate(box)
        for name in pairs:
            line = page.locator(f"#fig-attacks polyline.attack-{name}")
            assert line.bounding_box()["width"] > 0.5 * frame["width"], name
            # The line's geometry (without its stroke) stays within the frame.
            x, line_width = line.evaluate(box)
            assert frame_x <= x
            assert x + line_width <= frame_x + frame_width
    page.close()


def test_landscape_in_browser(
    browser: Any, make_synthetic: Callable[..., AuditResult], tmp_path: Path
) -> None:
    records = []
    for strategy, shift, params in (
        ("baseline-50", 1.0, {"epochs": 50}),
        ("baseline-10", 0.3, {"epochs": 10}),
        ("dp-eps1", 0.05, {"target_epsilon": 1}),
        ("dp-eps10", 0.15, {"target_epsilon": 10}),
    ):
        for repeat in range(3):
            result = make_synthetic(1000, seed=repeat, shift=shift)
            payload = result.to_dict()
            payload["utility"]["population"]["auroc"] = 0.6 + 0.3 * shift + 0.01 * repeat
            record: dict[str, Any] = {
                "entry": {"strategy": strategy, "repeat": repeat, "params": params},
                "result": payload,
            }
            if repeat == 0:
                report = tmp_path / f"{strategy}-0.html"
                record["report"] = str(render(result, report, ks_components=()))
            records.append(record)
    path = render_landscape(records, tmp_path / "landscape.html")
    page = check_page(browser, path, n_charts=3)
    links = page.locator("svg a")
    assert links.count() == 4
    target = links.first.get_attribute("href")
    assert (tmp_path / target).is_file()
    assert links.first.locator("title").first.text_content().startswith("baseline-50")
    figure = page.locator("#fig-landscape").bounding_box()
    top, main, right = (page.locator("svg").nth(i) for i in range(3))
    assert main.bounding_box()["width"] + right.bounding_box()["width"] >= 0.97 * figure["width"]
    frames = [chart.locator("rect.frame").bounding_box() for chart in (top, main, right)]
    # The margins' plots line up with the main plot at any page width.
    assert frames[0]["x"] == pytest.approx(frames[1]["x"], abs=1)
    assert frames[0]["width"] == pytest.approx(frames[1]["width"], abs=1)
    assert frames[2]["y"] == pytest.approx(frames[1]["y"], abs=1)
    assert frames[2]["height"] == pytest.approx(frames[1]["height"], abs=1)
    page.close()
