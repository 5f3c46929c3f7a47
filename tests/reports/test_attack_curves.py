"""The attacks' ROC curves: their numbers against scikit-learn's ROC, their size, the chart.

The chart's numbers come from :func:`epsstar.audit.output.figures.attack_curves`; they are checked
against :func:`sklearn.metrics.roc_curve` of the same scores (every point drawn is a test
that scikit-learn's curve has, or the step just before one), and against the readings that
the attacks table prints.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from sklearn.metrics import roc_curve

from epsstar.audit.output.attack_result import AttackResult
from epsstar.audit.output.figures import (
    ROC_LEVELS,
    ROC_LOW_COUNTS,
    AttackCurve,
    attack_curves,
    audit_figures,
    roc_points,
)
from epsstar.audit.output.result import AuditResult
from epsstar.reports import render
from epsstar.statistics.readings.readings import READING_FPRS, membership_readings

Synthetic = Callable[..., AuditResult]
Scores = dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]]

#: The most corners roc_points keeps (its docstring's bound).
MOST_CORNERS = 2 * (ROC_LOW_COUNTS + 1) + 2 * (ROC_LEVELS + len(READING_FPRS)) + 1


def with_attacks(base: AuditResult, scores: Scores, epsilons: dict[str, float]) -> AuditResult:
    """``base`` with one attack per entry of ``scores`` (members, non-members), each read as
    the audit reads it; Epsilon* is set to ``epsilons`` and every lower bound is the same,
    so the strongest is the one with the largest Epsilon*."""
    attacks = []
    for name, (members, others) in scores.items():
        epsilon = dataclasses.replace(
            base.epsilon,
            epsilon=epsilons[name],
            n_train=members.size,
            n_population=others.size,
        )
        attacks.append(
            AttackResult(
                name=name,  # type: ignore[arg-type]
                epsilon=epsilon,
                empirical=base.empirical,
                lower_bound=base.lower_bound,
                gate=None,
                readings=membership_readings(members, others, epsilon),
                auc=0.5,
                settings={},
                member_scores=members,
                nonmember_scores=others,
            )
        )
    return dataclasses.replace(base, attacks=tuple(attacks))


def scores(seed: int, n_members: int, n_others: int, shift: float) -> tuple[NDArray, NDArray]:
    """Normal scores, members lower by ``shift``, rounded so that there are ties."""
    rng = np.random.default_rng(seed)
    return (
        np.round(rng.normal(-shift, 1.0, n_members), 1),
        np.round(rng.normal(0.0, 1.0, n_others), 1),
    )


def sklearn_roc(members: NDArray, others: NDArray) -> tuple[NDArray, NDArray]:
    """(FPR, TPR) of every threshold, from scikit-learn (members are the positives; lower
    scores are more member-like, so the scores are negated)."""
    labels = np.concatenate([np.ones(members.size), np.zeros(others.size)])
    fpr, tpr, _ = roc_curve(labels, -np.concatenate([members, others]), drop_intermediate=False)
    return fpr, tpr


def check_against_sklearn(curve: AttackCurve, members: NDArray, others: NDArray) -> None:
    n, m = others.size, members.size
    fpr, tpr = sklearn_roc(members, others)
    assert curve.n_nonmembers == n
    assert curve.n_members == m
    # Each drawn point, in counts, with a count of 0 drawn as 1.
    drawn = set(
        zip(np.rint(curve.fpr * n).astype(int), np.rint(curve.tpr * m).astype(int), strict=True)
    )
    corners = set(zip(np.rint(fpr * n).astype(int), np.rint(tpr * m).astype(int), strict=True))

    def clipped(x: int, y: int) -> tuple[int, int]:
        return max(x, 1), max(y, 1)

    corners_drawn = {clipped(x, y) for x, y in corners}
    for x, y in drawn:
        # A test of scikit-learn's curve, or the step from one to the next FPR drawn.
        step = any(a < x and max(b, 1) == y for a, b in corners)
        assert (x, y) in corners_drawn or step, (x, y)
    # The low end is exact: at 1 to ROC_LOW_COUNTS flagged non-members (and at every count
    # drawn), the staircase is the largest TPR of scikit-learn's tests with FPR at most that.
    drawn_fpr = np.rint(curve.fpr * n).astype(int)
    drawn_tpr = np.rint(curve.tpr * m).astype(int)
    for count in {*range(1, min(ROC_LOW_COUNTS, n) + 1), *drawn_fpr.tolist()}:
        best = max(b for a, b in corners if a <= count)
        assert drawn_tpr[np.searchsorted(drawn_fpr, count, side="right") - 1] == max(best, 1)
    # A staircase from (1/n, ...) to (1, 1), never falling back, finite and positive.
    assert np.all(np.isfinite(curve.fpr))
    assert np.all(np.isfinite(curve.tpr))
    assert curve.fpr[0] == 1.0 / n
    assert (curve.fpr[-1], curve.tpr[-1]) == (1.0, 1.0)
    assert np.all(np.diff(curve.fpr) >= 0)
    assert np.all(np.diff(curve.tpr) >= 0)
    assert np.all((np.diff(curve.fpr) == 0) | (np.diff(curve.tpr) == 0))
    # The table's readings, on the curve: the largest TPR of a test with FPR at most the level.
    for mark, level in zip(curve.marks, READING_FPRS, strict=True):
        expected = float(tpr[fpr <= level + 1e-12].max())
        assert mark.fpr == level
        assert mark.tpr == pytest.approx(expected, abs=1e-12)
        assert (mark.x, mark.y) == (max(level, 1.0 / n), max(expected, 1.0 / m))
        if level < 1.0 / n:  # the test flagging none: drawn at the foot of the first step
            assert any((curve.fpr == mark.x) & (curve.tpr == mark.y))
        else:
            top = np.searchsorted(curve.fpr, mark.x * (1 + 1e-12), side="right") - 1
            assert curve.tpr[top] == pytest.approx(mark.y, abs=1e-12)


@pytest.mark.parametrize(
    ("n_members", "n_others", "shift"),
    [(300, 225, 0.6), (5_000, 20_000, 1.0), (40, 1_500, 0.0), (2_000, 100, 3.0)],
)
def test_curves_match_sklearn_and_the_readings(
    make_synthetic: Synthetic, n_members: int, n_others: int, shift: float
) -> None:
    loss = scores(1, n_members, n_others, 0.3)
    other = scores(2, n_members, n_others, shift)
    result = with_attacks(
        make_synthetic(1_000), {"loss": loss, "rmia": other}, {"loss": 1.0, "rmia": 2.0}
    )
    figure = attack_curves(result)
    assert figure is not None
    assert [curve.name for curve in figure.curves] == ["loss", "rmia"]
    assert [curve.strongest for curve in figure.curves] == [False, True]
    for curve, (members, others) in zip(figure.curves, (loss, other), strict=True):
        check_against_sklearn(curve, members, others)
        assert curve.fpr.size <= 2 * MOST_CORNERS
    low, high = figure.axis
    assert high == 1.0
    assert math.log10(low) == round(math.log10(low))
    assert low <= 1.0 / max(n_members, n_others) < 10 * low


@settings(max_examples=40, deadline=None)
@given(
    members=st.lists(st.integers(0, 30), min_size=1, max_size=60),
    others=st.lists(st.integers(0, 30), min_size=1, max_size=ROC_LOW_COUNTS),
)
def test_roc_points_are_tests_of_the_sklearn_curve(members: list[int], others: list[int]) -> None:
    """Small integer scores (many ties): every corner kept is one of scikit-learn's points."""
    a, b = np.asarray(members, dtype=float), np.asarray(others, dtype=float)
    flagged, found = roc_points(a, b)
    fpr, tpr = sklearn_roc(a, b)
    corners = set(
        zip(np.rint(fpr * b.size).astype(int), np.rint(tpr * a.size).astype(int), strict=True)
    )
    assert set(zip(flagged.tolist(), found.tolist(), strict=True)) <= corners
    assert (flagged[0], found[0]) == (0, 0)
    assert (flagged[-1], found[-1]) == (b.size, a.size)
    # With so few records the staircase is exact at every count of flagged non-members.
    for count in range(b.size + 1):
        best = max(y for x, y in corners if x <= count)
        assert found[np.searchsorted(flagged, count, side="right") - 1] == best


def test_size_is_bounded_for_a_million_scores() -> None:
    rng = np.random.default_rng(3)
    members, others = rng.normal(-0.5, 1.0, 1_000_000), rng.normal(0.0, 1.0, 1_000_000)
    flagged, found = roc_points(members, others)
    assert flagged.size <= MOST_CORNERS
    assert flagged[0] == 0
    assert flagged[-1] == others.size
    assert found[-1] == members.size
    # Evenly spread in log FPR: no decade between 1e-4 and 1 without at least 10 points.
    fpr = flagged / others.size
    for decade in range(-4, 0):
        assert np.count_nonzero((fpr >= 10.0**decade) & (fpr < 10.0 ** (decade + 1))) >= 10


def test_the_bound_of_the_strongest_attack(make_synthetic: Synthetic) -> None:
    pair = scores(5, 500, 500, 1.0)
    base = make_synthetic(1_000)
    figure = attack_curves(with_attacks(base, {"loss": pair, "lira": pair}, {"loss": 1, "lira": 3}))
    assert figure is not None
    assert figure.bound is not None
    assert figure.strongest.name == "lira"
    assert figure.bound_epsilon == 3.0
    x, y = figure.bound.x, figure.bound.y
    delta = base.epsilon.delta
    assert x[0] == figure.axis[0]
    assert y == pytest.approx(np.minimum(1, math.exp(3) * x + delta))
    assert y[-1] == pytest.approx(1.0)
    assert np.all(y[:-1] < 1.0)
    # So large an Epsilon* allows TPR = 1 on the whole axis: no line along the frame.
    huge = attack_curves(with_attacks(base, {"loss": pair, "lira": pair}, {"loss": 1, "lira": 9}))
    assert huge is not None
    assert huge.bound is None


def test_no_curves_for_the_loss_attack_alone(make_synthetic: Synthetic, tmp_path: Path) -> None:
    base = make_synthetic(1_000)
    pair = scores(6, 300, 300, 1.0)
    assert attack_curves(base) is None  # no attack records (an older result)
    assert attack_curves(with_attacks(base, {"loss": pair}, {"loss": 1.0})) is None
    alone = with_attacks(base, {"lira": pair}, {"lira": 1.0})  # one attack, not the loss one
    figure = attack_curves(alone)
    assert figure is not None
    assert figure.curves[0].strongest
    html = render(alone, tmp_path / "lira.html", ks_components=()).read_text("utf-8")
    assert html.count('<figure id="fig-attacks">') == 1


def svg_of(html: str) -> str:
    start = html.index('<figure id="fig-attacks">')
    return html[start : html.index("</figure>", start)]


def test_the_chart_draws_one_line_per_attack(make_synthetic: Synthetic, tmp_path: Path) -> None:
    pairs = {
        "loss": scores(7, 400, 400, 0.5),
        "lira": scores(8, 400, 400, 1.5),
        "rmia": scores(9, 400, 300, 1.0),
    }
    result = with_attacks(make_synthetic(1_000), pairs, {"loss": 1.0, "lira": 2.5, "rmia": 2.0})
    figures = audit_figures(result, ks_components=())
    html = render(result, tmp_path / "r.html", figures=figures).read_text("utf-8")
    svg = svg_of(html)
    for name in pairs:
        assert len(re.findall(rf'<polyline class="attack-{name}[ "]', svg)) == 1, name
    assert svg.count('<polyline class="attack-lira strongest"') == 1
    assert "lira (strongest)" in svg
    assert svg.count('<polyline class="dp-boundary"') == 1
    assert svg.count('<polyline class="no-leak"') == 1
    assert re.search(r"\b(nan|inf|infinity)\b", svg, flags=re.IGNORECASE) is None
    # Two marks per attack, each at the table's value (in the tooltip).
    assert len(re.findall(r'<circle class="mark-(?:loss|lira|rmia)"', svg)) == 6
    for attack in result.attacks:
        for reading in attack.readings.tpr_at_fpr:
            assert f"{attack.name}: TPR {reading.tpr_observed:.4g} at" in svg
    # Right after the attacks table, before the losses.
    table = html.index('<table id="attacks-table">')
    assert table < html.index('<figure id="fig-attacks">') < html.index('<section id="losses">')
    caption = " ".join(svg[svg.index("<figcaption>") :].split())
    assert "rmia: 400 members and 300 non-members" in caption
    assert "counts of 0" in caption.lower()
    assert "FPR &lt; 1/400, TPR &lt; 1/400" in caption
    # Every attack's line has a style of its own.
    css = html[html.index("<style>") : html.index("</style>")]
    for name in ("loss", "lira", "rmia"):
        assert f"svg .attack-{name} {{" in css
        assert f"svg .mark-{name} {{" in css
