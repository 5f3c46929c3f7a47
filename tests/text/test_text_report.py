"""The report of a text audit draws one histogram of each attack's scores, members against
non-members (docs/text.md, "What the report shows")."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from tiny_lm import TinyCorpus

from epsstar import reports
from epsstar.audit.attacks.scoring import AttackSettings
from epsstar.audit.data.text_records import TextTables
from epsstar.audit.model.loading import ModelFile
from epsstar.audit.options import AuditOptions
from epsstar.audit.output.figures import audit_figures
from epsstar.audit.output.result import AuditResult
from epsstar.audit.text_run import TextRun, audit_text

ATTACKS = ("loss", "zlib", "mink", "minkpp")


@pytest.fixture(scope="module")
def result(corpus: TinyCorpus) -> AuditResult:
    run = TextRun(
        ModelFile(corpus.model),
        TextTables(corpus.train, corpus.population, "text"),
        AuditOptions(),
        AttackSettings(ATTACKS),
    )
    return audit_text(run)


def test_each_attack_s_histogram_counts_its_scores(result: AuditResult) -> None:
    found = audit_figures(result, ks_components=()).attack_histograms
    assert [h.name for h in found] == list(ATTACKS)
    for attack, drawn in zip(result.attacks, found, strict=True):
        bars = drawn.figure.histogram
        # Counted again with numpy's own histogram in the figure's edges: a histogram of
        # another attack's scores, or of one side for the other, would not match.
        for scores, side in (
            (attack.member_scores, bars.train),
            (attack.nonmember_scores, bars.population),
        ):
            counts, _ = np.histogram(scores, bins=bars.edges)
            np.testing.assert_array_equal(side.counts, counts)
            assert side.counts.sum() + side.outside == scores.size
            # Percentages of the side's records (exact up to float rounding).
            np.testing.assert_allclose(side.heights, 100 * counts / scores.size, rtol=1e-12)


def test_the_report_draws_one_figure_per_attack(result: AuditResult, tmp_path: Path) -> None:
    html = reports.render(result, tmp_path / "report.html", ks_components=()).read_text()
    section = html[html.index('<section id="text">') :]
    section = section[: section.index("</section>")]
    for name in ATTACKS:
        assert section.count(f'id="fig-scores-{name}"') == 1
    assert section.count("<svg") == len(ATTACKS)
    assert "zlib score (lower = more member-like)" in section


def test_a_table_audit_draws_no_attack_histograms(result: AuditResult) -> None:
    tabular = audit_figures(dataclasses.replace(result, text=None), ks_components=())
    assert tabular.attack_histograms == ()
