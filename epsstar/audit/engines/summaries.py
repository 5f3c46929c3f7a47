"""Tables too large to hold a loss per row: which sides an audit summarises, and how.

A side of more than :data:`~epsstar.audit.data.summary_plans.EXACT_ROWS` rows is held as a
:class:`~epsstar.statistics.summaries.loss_summary.LossSummary` (exact tails, a fine
histogram of the body, each halving's halves, a random sample) instead of one loss per row,
when every statistic the audit reports can be computed from it: the headline method is a tails
method or the empirical one, with no bootstrap interval, no attack but the loss attack and
no slices (:func:`can_summarise`). Then both sides also keep the row hashes of the
shared-row check for a random share of their rows only
(:data:`~epsstar.audit.data.summary_plans.HASH_SAMPLE` rows of the larger side, chosen by
the hash itself, so a row in both tables is kept in both or in neither), and the AUROC is
that of each summarised side's random sample.

The rule is the same in both engines: the single-process engine summarises the tables it
streamed; on a Dask cluster each worker summarises its partition (at the positions the
Parquet footers' row counts give it) and the client merges the summaries, so the client
holds O(sqrt(rows)) per side, and both engines write the same JSON.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Final

import numpy as np

from epsstar.audit.data.checks import TableScan
from epsstar.audit.engines.streaming import MAX_AUROC_VALUES, StreamedTable
from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.names import TAIL_METHODS
from epsstar.statistics.summaries.loss_summary import (
    LossSummary,
    SummaryPlan,
    merge_summaries,
    summarise_losses,
)

__all__ = [
    "can_summarise",
    "join_tables",
    "losses_of",
    "summarise_table",
]

#: The headline methods whose statistics summaries serve: every tails method and the
#: empirical one.
SUMMARISED_METHODS: Final = frozenset({*TAIL_METHODS, "empirical"})


def can_summarise(
    method: str, interval: float | None, attacks: Sequence[str], sliced: bool
) -> bool:
    """Whether every statistic of an audit with these settings can be computed from
    summaries (see the module doc)."""
    loss_only = all(name == "loss" for name in attacks)
    return method in SUMMARISED_METHODS and interval is None and loss_only and not sliced


def summarise_table(
    table: StreamedTable, plan: SummaryPlan | None, hash_rate: float, *, offset: int = 0
) -> StreamedTable:
    """``table`` (rows ``offset …`` of its data set) summarised by ``plan`` (``None``: its
    losses kept whole), its row hashes sampled at ``hash_rate``."""
    scan = table.scan.sampled(hash_rate)
    if plan is None:
        return dataclasses.replace(table, scan=scan)
    kept = plan.sampled(offset, table.rows)
    return dataclasses.replace(
        table,
        losses=table.losses[kept],
        labels=None if table.labels is None else table.labels[kept],
        scores=None if table.scores is None else table.scores[kept],
        scan=scan,
        summary=summarise_losses(table.losses, plan, offset=offset),
    )


def join_tables(parts: Sequence[StreamedTable], role: str) -> StreamedTable:
    """The partitions of one table as one, in order (their summaries merged; the AUROC's
    scores kept within the same budget as a single stream's)."""
    first = parts[0]
    for part in parts[1:]:
        if part.n_outputs != first.n_outputs or part.label_map != first.label_map:
            raise InvalidInputError(
                f"the model's predictions on the {role} data must stand for its "
                f"{len(first.label_map)} classes, as before. Found {part.n_outputs}."
            )
    rows = sum(part.rows for part in parts)
    labels = scores = None
    if all(part.labels is not None and part.scores is not None for part in parts):
        width = 1 if first.scores is None or first.scores.ndim == 1 else first.scores.shape[1]
        kept = sum(part.labels.size for part in parts if part.labels is not None)
        if kept * width <= MAX_AUROC_VALUES:
            labels = np.concatenate([part.labels for part in parts])
            scores = np.concatenate([part.scores for part in parts])
    summaries = [part.summary for part in parts if part.summary is not None]
    return StreamedTable(
        losses=np.concatenate([part.losses for part in parts]),
        labels=labels,
        scores=scores,
        correct=sum(part.correct for part in parts),
        rows=rows,
        n_outputs=first.n_outputs,
        label_map=first.label_map,
        scan=TableScan(
            np.concatenate([part.scan.hashes for part in parts]),
            np.sum([part.scan.class_counts for part in parts], axis=0),
            rows if first.scan.hash_rate < 1 else None,
            first.scan.hash_rate,
        ),
        summary=merge_summaries(summaries) if summaries else None,
    )


def losses_of(table: StreamedTable) -> LossSummary | FloatArray:
    """What the statistics take of a table: its summary, or its losses."""
    return table.summary if table.summary is not None else table.losses
