"""Summaries of a few distinct losses: merged atoms and any input shape, against np.unique."""

from __future__ import annotations

import numpy as np

from epsstar.statistics.summaries.loss_summary import (
    SummaryPlan,
    merge_summaries,
    summarise_losses,
)


def test_merged_atoms_are_the_counts_of_every_part() -> None:
    plan = SummaryPlan(3, 0, k=10)
    rng = np.random.default_rng(4)
    values = rng.choice([0.5, 1.0, 2.0, 4.0], size=300)
    parts = [summarise_losses(values[:120], plan), summarise_losses(values[120:], plan, offset=120)]
    merged = merge_summaries(parts)
    distinct, counts = np.unique(values, return_counts=True)
    assert merged.atoms is not None
    assert merged.atoms[0].tolist() == distinct.tolist()
    assert merged.atoms[1].tolist() == counts.tolist()


def test_a_matrix_of_losses_is_read_as_its_flat_records() -> None:
    plan = SummaryPlan(3, 0, k=10)
    values = np.random.default_rng(5).choice([0.5, 1.0, 2.0], size=(6, 4))
    summary = summarise_losses(values, plan)
    assert summary.n == 24
    assert summary.atoms is not None
    assert summary.atoms[1].sum() == 24


def test_a_one_record_stretch_merges_although_one_half_is_empty() -> None:
    plan = SummaryPlan(3, 0, k=10)
    values = np.random.default_rng(6).normal(size=40)
    parts = [summarise_losses(values[:1], plan), summarise_losses(values[1:], plan, offset=1)]
    assert min(half.n for half in parts[0].held_out) == 0
    merged = merge_summaries(parts)
    assert merged.n == 40
    assert sum(half.n for half in merged.held_out) == 40
    assert merged.whole.low.tolist() == np.sort(values)[:10].tolist()  # the k = 10 lowest
