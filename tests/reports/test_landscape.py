"""The privacy-utility landscape: Pareto frontier, categories, links, escaping, CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from epsstar.audit.output.landscape_data import landscape
from epsstar.cli import main
from epsstar.reports import render_landscape


def record(strategy: str, eps: float, auroc: float | None, **params: Any) -> dict[str, Any]:
    result = {
        "epsilon_star": eps,
        "utility": {"population": {"n": 10, "accuracy": 0.5, "auroc": auroc}},
    }
    return {"entry": {"strategy": strategy, "repeat": 0, "params": params}, "result": result}


def test_landscape_marks_frontier_and_means(tmp_path: Path) -> None:
    records = [
        record("a", 1.0, 0.80, epochs=10),
        record("a", 3.0, 0.90, epochs=10),  # mean (2.0, 0.85)
        record("b", 0.5, 0.70, target_epsilon=1),
        record("c", 2.5, 0.80, epochs=50),  # beaten by a
        record("d", 0.1, None, epochs=1),  # no AUROC: listed, not plotted
    ]
    records[1]["entry"]["repeat"] = 1
    html = render_landscape(records, tmp_path / "l.html").read_text("utf-8")
    rows = dict(re.findall(r'<tr data-strategy="([^"]+)">(.*?)</tr>', html, re.S))
    assert set(rows) == {"a", "b", "c", "d"}
    assert "<td>yes</td>" in rows["a"]
    assert "<td>yes</td>" in rows["b"]
    assert "<td>yes</td>" not in rows["c"]
    assert "<td>yes</td>" not in rows["d"]
    assert '2.0000<br><span class="range">[1.0000, 3.0000]</span>' in rows["a"]
    assert '0.8500<br><span class="range">[0.8000, 0.9000]</span>' in rows["a"]
    assert html.count('<circle class="point-') == 3 + 2  # three strategies, two legend markers
    assert "pareto-line" in html


def test_landscape_escapes_names_and_links_reports(tmp_path: Path) -> None:
    evil = "<script>alert(1)</script>"
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "x.html").write_text("report", encoding="utf-8")
    first = record(evil, 1.0, 0.8, note="<b>")
    first["report"] = str(reports / "x.html")
    (tmp_path / "out").mkdir()
    html = render_landscape([first, record("b", 0.4, 0.6)], tmp_path / "out" / "l.html")
    text = html.read_text("utf-8")
    assert "<script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<b>" not in text
    assert 'href="../reports/x.html"' in text


def test_a_landscape_record_is_drawn_as_it_is(tmp_path: Path) -> None:
    records = [record("a", 1.0, 0.8), record("b", 0.5, 0.7, target_epsilon=1)]
    data = landscape(records, utility="accuracy")
    drawn = render_landscape(data, tmp_path / "record.html").read_text("utf-8")
    built = render_landscape(records, tmp_path / "built.html", utility="accuracy")
    assert drawn == built.read_text("utf-8")
    assert "accuracy on population data" in drawn


def test_cli_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "a.json"
    good.write_text(json.dumps({"models": [record("s", 1.0, 0.8)]}), encoding="utf-8")
    out = tmp_path / "l.html"
    assert main(["landscape", str(good), "--out", str(out), "--utility", "accuracy"]) == 0
    assert "accuracy on population data" in out.read_text("utf-8")
    capsys.readouterr()
    for bad_content in ("not json", json.dumps({"something": 1}), json.dumps([1, 2])):
        bad = tmp_path / "bad.json"
        bad.write_text(bad_content, encoding="utf-8")
        assert main(["landscape", str(bad), "--out", str(out)]) == 2
        error = capsys.readouterr().err
        assert error.count("\n") == 1
        assert "bad.json" in error
    assert main(["landscape", str(tmp_path / "missing.json"), "--out", str(out)]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("models", "message"),
    [
        ([{"entry": {}}], "results.json: a record needs an entry with a strategy"),
        ([{"entry": {"model": "m.onnx"}}], "results.json: model 'm' #0 has neither a result"),
        ([{"entry": {"strategy": "s"}}], "neither a result nor an error"),
        ([{"entry": {"strategy": "s"}, "result": {}}], "has no epsilon_star"),
        ([{"entry": {"strategy": "s"}, "error": "broken"}], "no audited model has both"),
        (
            [record("s", 1.0, None)],
            "no audited model has both an Epsilon\\* and a population auroc",
        ),
    ],
)
def test_cli_refuses_results_with_nothing_to_plot(
    models: list[dict[str, Any]], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"models": models}), encoding="utf-8")
    out = tmp_path / "l.html"
    assert main(["landscape", str(results), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert re.search(message, error)
    assert not out.exists()


def test_audit_many_reports_feed_the_landscape(tmp_path: Path) -> None:
    models = Path(__file__).resolve().parents[2] / "fixtures" / "models"
    manifest = tmp_path / "manifest.csv"
    lines = ["model,train,population,label_column,strategy,repeat,target_epsilon"]
    for name, strategy, target in (
        ("binary_mlp.onnx", "mlp", ""),
        ("binary_logreg.onnx", "lr", "1"),
    ):
        lines.append(
            f"{models / name},{models / 'binary_train.csv'},"
            f"{models / 'binary_population.csv'},label,{strategy},0,{target}"
        )
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    results = tmp_path / "out" / "results.json"
    results.parent.mkdir()
    code = main(
        ["audit-many", str(manifest), "--jobs", "1", "--quiet", "--json", str(results),
         "--reports", str(tmp_path / "out" / "reports")]
    )  # fmt: skip
    assert code == 0
    recorded = json.loads(results.read_text("utf-8"))["models"]
    assert [r["report"] for r in recorded] == ["reports/mlp-0.html", "reports/lr-0.html"]
    page = tmp_path / "landscape.html"
    assert main(["landscape", str(results), "--out", str(page)]) == 0
    html = page.read_text("utf-8")
    assert 'href="out/reports/mlp-0.html"' in html
    assert 'class="badge dp">DP<' in html


def _table_row(html: str, strategy: str) -> str:
    match = re.search(rf'<tr data-strategy="{strategy}">(.*?)</tr>', html, re.S)
    assert match is not None
    return match.group(1)


def test_points_are_numbered_and_hyper_parameters_are_formatted(tmp_path: Path) -> None:
    dp = {
        "private": True,
        "target_epsilon": 1,
        "epsilon": 0.9988070743558518,
        "delta": 2.9556318103336777e-06,
        "clip": 1.0,
        "hidden": [100, 100],
        "lr": "0.01",
        "accountant": "pld",
        "seed": 3,
    }
    base = {"private": False, "epochs": 5, "clip": None, "target_epsilon": None, "delta": None}
    records = [
        record("dp-eps1", 0.5, 0.70, **dp),
        record("nonprivate", 2.0, 0.90, **base),
        record("unplotted", 1.0, None, **base),
    ]
    html = render_landscape(records, tmp_path / "l.html").read_text("utf-8")
    table = html[html.index('<table id="strategies-table">') :]
    table = table[: table.index("</table>")]
    assert "None" not in table
    assert "2.9556318103336777e-06" not in html
    settings = re.findall(r'<span class="nowrap">([^<]+)</span>', table)
    assert settings[:7] == [
        "private = yes",
        "delta = 2.96e-06",
        "clip = 1",
        "hidden = [100, 100]",
        "lr = 0.01",
        "accountant = pld",
        "private = no",
    ]
    assert "seed" not in table
    # A CSV manifest spells its flags "True" and "False": they read as yes and no too.
    spelled = [record("csv", 1.0, 0.8, private="False"), record("csv2", 1.0, 0.8, private="True")]
    csv_html = render_landscape(spelled, tmp_path / "csv.html").read_text("utf-8")
    flags = re.findall(r'data-params="(csv2?)">.*?<span class="nowrap">([^<]+)</span>', csv_html)
    assert flags == [("csv", "private = no"), ("csv2", "private = yes")]
    assert '0.999<br><span class="range">target 1</span>' in _table_row(html, "dp-eps1")
    assert '<th class="num">DP ε</th>' in table
    # Numbers: one per strategy in the table, drawn beside each plotted point and keyed.
    numbers = [
        re.search(r'<td class="num">(\d+)</td>', _table_row(html, s))
        for s in ("dp-eps1", "nonprivate", "unplotted")
    ]
    assert [m.group(1) for m in numbers if m] == ["1", "2", "3"]
    labels = re.findall(r'<text class="point-label"[^>]*>(\d+)</text>', html)
    assert labels == ["1", "2"]
    key = html[html.index('<ol class="key"') : html.index("</ol>")]
    assert re.findall(r'<span class="n">(\d+)</span> ([^<]+)</li>', key) == [
        ("1", "dp-eps1"),
        ("2", "nonprivate"),
    ]
    assert '<td class="name">dp-eps1</td>' in html
    assert "td.name, .nowrap { white-space: nowrap; }" in html
    assert 'class="errorbar-dp"' in html
    assert 'class="errorbar-baseline"' in html

    baselines = render_landscape(records[1:], tmp_path / "b.html").read_text("utf-8")
    assert "DP ε" not in baselines.split('<table id="strategies-table">')[1]


def test_densities_need_five_models(tmp_path: Path) -> None:
    few = [record(f"s{i}", 0.5 + i, 0.7 + 0.01 * i, epochs=i) for i in range(2)]
    html = render_landscape(few, tmp_path / "few.html").read_text("utf-8")
    assert 'class="kde-' not in html
    assert html.count('class="rug-baseline"') == 2 * 2  # a dot per model on both margins
    assert "2 baseline models: too few for a curve" in html
    many = [record(f"s{i}", 0.5 + i, 0.7 + 0.01 * i, epochs=i) for i in range(5)]
    html = render_landscape(many, tmp_path / "many.html").read_text("utf-8")
    assert html.count('<polyline class="kde-baseline"') == 2


def test_labels_beside_close_points_do_not_overlap() -> None:
    from epsstar.reports.landscape import _label_box, _overlap, place_labels

    points = [(100.0, 100.0, "1"), (104.0, 98.0, "2"), (96.0, 103.0, "10"), (300.0, 50.0, "4")]
    frame = (0.0, 0.0, 400.0, 300.0)
    spots = place_labels(points, frame)
    boxes = [_label_box(x, y, t, spot) for (x, y, t), spot in zip(points, spots, strict=True)]
    for i, a in enumerate(boxes):
        assert _overlap(a, frame) == pytest.approx((a[2] - a[0]) * (a[3] - a[1]))  # inside
        for b in boxes[i + 1 :]:
            assert _overlap(a, b) == 0
    corner = place_labels([(398.0, 2.0, "7")], frame)  # top right: the label goes below left
    assert corner[0][0] < 0
    assert corner[0][1] > 0


def test_every_model_at_zero_has_its_dot(tmp_path: Path) -> None:
    records = [record(f"dp{i % 3}", 0.0, 0.7 + 0.01 * i, target_epsilon=1) for i in range(15)]
    records += [record("base", 1.0 + 0.1 * i, 0.8 + 0.01 * i, epochs=i) for i in range(5)]
    html = render_landscape(records, tmp_path / "l.html").read_text("utf-8")
    top = html.split('aria-label="Epsilon* density by category"')[1].split("</svg>")[0]
    assert top.count('<circle class="rug-dp"') == 15
    assert top.count('<circle class="rug-baseline"') == 5
    heights = {float(c.split('cy="')[1].split('"')[0]) for c in top.split("<circle")[1:]}
    assert len(heights) == 15  # the models at 0 stacked at 15 heights (the others at 1)
    assert "15 DP models, all at Epsilon* 0.0000: a point mass, no curve" in html
    assert "5 baseline models, with a curve" in html
