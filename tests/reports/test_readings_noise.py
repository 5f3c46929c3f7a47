"""The report never shows an observed reading above its allowed value without saying why."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from epsstar.audit.model.declared_privacy import DeclaredPrivacy
from epsstar.audit.output.result import AuditResult
from epsstar.reports import render
from epsstar.statistics.readings.readings import Readings, TprReading


def with_readings(result: AuditResult, advantage: float, tpr: float) -> AuditResult:
    """``result`` at ε* = 0's allowed values (advantage δ, TPR = FPR + δ) with these observed."""
    readings = Readings(
        posterior_belief_bound=0.5,
        advantage_observed=advantage,
        advantage_bound=0.0,
        tpr_at_fpr=(TprReading(0.01, tpr, None, 0.01),),
    )
    return dataclasses.replace(result, readings=readings)


def html_of(result: AuditResult, path: Path) -> str:
    return render(result, path, ks_components=()).read_text("utf-8")


def test_an_excess_within_noise_is_marked_and_explained(
    binary_result: AuditResult, tmp_path: Path
) -> None:
    # The binary fixture has 1,000 + 1,000 records: noise allows an advantage of ~0.055.
    html = html_of(with_readings(binary_result, 0.02, 0.012), tmp_path / "a.html")
    assert "0.0200&nbsp;†" in html
    assert "by no more than sampling noise at 95 % confidence" in html
    assert "‡" not in html


def test_an_excess_beyond_noise_says_epsilon_star_understates_it(
    binary_result: AuditResult, tmp_path: Path
) -> None:
    html = html_of(with_readings(binary_result, 0.3, 0.2), tmp_path / "a.html")
    assert "0.3000&nbsp;‡" in html
    assert "so Epsilon* understates it" in html
    assert "†" not in html


def test_values_within_their_allowed_ones_get_no_mark(
    multiclass_result: AuditResult, tmp_path: Path
) -> None:
    html = html_of(multiclass_result, tmp_path / "a.html")
    assert "here each is within its allowed value" in html
    assert "†" not in html
    assert "‡" not in html


def test_an_empirical_value_above_a_declared_guarantee_is_explained(
    binary_result: AuditResult, tmp_path: Path
) -> None:
    declared = DeclaredPrivacy(private=True, epsilon=0.5, delta=binary_result.delta)
    result = dataclasses.replace(binary_result, declared_privacy=declared)
    assert result.empirical.epsilon > 0.5
    assert result.empirical.epsilon > result.epsilon_star
    html = html_of(result, tmp_path / "a.html")
    assert 'id="empirical-note"' in html
    assert "not a breach of the guarantee" in html
    assert 'class="big">' + f"{result.empirical.epsilon:.4f}" not in html  # not a headline card
