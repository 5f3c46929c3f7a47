"""The target and K reference models scored on one read of each table.

LiRA and RMIA (``lira-carlini-2022.pdf``, ``rmia-zarifzadeh-2024.pdf``) take, per record, the
log-odds of the true label φ = −(logit loss) under the target and under each of K reference
models. Read one model at a time, a table is read and encoded (parsed, checked, hashed,
converted to the model's input type) K + 1 times. Here the reference models that read the
table as the target does (the same file columns, input type, text and missing-value
handling: usually all of them) ride on the target's own pass
(:func:`~epsstar.audit.engines.streaming.stream_table`): every batch, once read and encoded, is
handed to each of them in turn, so K models cost K model calls and no read. What is kept is
one log-odds per record and model (the attack's input), never a batch beyond the current one.
A reference model that reads the table otherwise is streamed on its own read
(:func:`~epsstar.audit.engines.references.reference_confidences`' grouping), so the result is
the same, model by model, as that of the model-by-model path, and so are the errors, each
naming the reference model's file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.audit.attacks.references import ReferenceConfidences, check_stated_classes
from epsstar.audit.data.column_match import ColumnMatch
from epsstar.audit.data.progress import Progress
from epsstar.audit.data.reading import Role, TableRead, Tables
from epsstar.audit.data.tables.labels import LabelMap
from epsstar.audit.engines.references import (
    ROLES,
    batch_log_odds,
    conversion_key,
    load_references,
    log_odds_together,
    matched_models,
    read_key,
)
from epsstar.audit.engines.streaming import batch_losses
from epsstar.audit.model.features import Features
from epsstar.audit.model.plugins import LoadedModel
from epsstar.audit.output.provenance import ReferenceModel
from epsstar.plumbing.runtime.device import CPU
from epsstar.statistics._validation import FloatArray

__all__ = ["BatchScores", "SharedReferences", "partition_scores"]


@dataclass(slots=True)
class BatchScores:
    """The log-odds of the target (when its losses are not logit losses already) and of the
    riding reference models on one table, batch by batch (mutable while the table streams)."""

    target: LoadedModel
    target_read: TableRead | None
    riders: list[tuple[int, tuple[LoadedModel, Path], TableRead]]
    checked: bool = False
    target_chunks: list[FloatArray] = field(default_factory=list)
    chunks: dict[int, list[FloatArray]] = field(default_factory=dict)

    def add(
        self,
        features: Features,
        labels: NDArray[np.int64],
        predictions: NDArray[np.float64],
        label_map: LabelMap,
    ) -> None:
        """Score one batch, already read, encoded and run through the target."""
        if not self.checked:
            for _, (model, path), _ in self.riders:
                check_stated_classes(getattr(model, "classes", None), label_map, path)
            self.checked = True
        if self.target_read is not None:
            self.target_chunks.append(
                -batch_losses(self.target, labels, predictions, self.target_read)
            )
        for index, loaded, read in self.riders:
            logits = batch_log_odds(loaded, features, labels, label_map, read)
            self.chunks.setdefault(index, []).append(logits)

    def target_log_odds(self, losses: FloatArray) -> FloatArray:
        """The target's log-odds on the whole table, given its ``losses`` as streamed: minus
        them when they are logit losses, else those scored beside them."""
        return -losses if self.target_read is None else np.concatenate(self.target_chunks)

    def rider_log_odds(self, models: int) -> list[FloatArray | None]:
        """The log-odds on the whole table of each of ``models`` reference models, in order
        (``None`` for those that did not ride)."""
        rows: list[FloatArray | None] = [None] * models
        for index, parts in self.chunks.items():
            rows[index] = np.concatenate(parts)
        return rows


@dataclass(frozen=True, slots=True)
class SharedReferences:
    """The reference models loaded once for both tables, and which of them ride on the
    target's read of each (see the module)."""

    target: LoadedModel
    loaded: tuple[tuple[LoadedModel, Path], ...]
    models: tuple[ReferenceModel, ...]
    matches: dict[Role, dict[tuple[object, ...], list[tuple[int, ColumnMatch]]]]

    @classmethod
    def load(
        cls,
        target: LoadedModel,
        paths: Sequence[Path],
        tables: Tables,
        *,
        trust: bool = False,
        device: str = CPU,
    ) -> SharedReferences:
        """Every reference model of ``paths``, loaded (on ``device`` when its loader takes one)
        and matched to both tables."""
        loaded, models = load_references(paths, trust=trust, device=device)
        matches = {role: matched_models(loaded, tables, role) for role in ROLES}
        return cls(target, tuple(loaded), tuple(models), matches)

    def scores(self, read: TableRead, match: ColumnMatch) -> BatchScores:
        """What rides on the target's read ``read`` (its columns found by ``match``) of one
        table: the target's log-odds, and the reference models that read it the same way."""
        key = read_key(self.target, match)
        members = self.matches[read.role].get(key, [])
        riders = [
            (index, self.loaded[index], replace(self._tables_read(read, found), loss="logit"))
            for index, found in members
        ]
        target_read = None if read.loss == "logit" else replace(read, loss="logit")
        return BatchScores(self.target, target_read, riders)

    @staticmethod
    def _tables_read(read: TableRead, match: ColumnMatch) -> TableRead:
        """The read of a riding reference model: the target's, under its own column names."""
        return replace(
            read,
            columns=tuple(match.file_columns),
            model_names=tuple(match.model_names) if match.renamed else None,
            outputs_requested=False,
        )

    def inputs(
        self,
        streamed: tuple[tuple[BatchScores, FloatArray], tuple[BatchScores, FloatArray]],
        tables: Tables,
        label_map: LabelMap,
        progress: Progress | None = None,
    ) -> AttackInputs:
        """The attack's inputs once both tables streamed: ``streamed`` holds, per table, what
        rode on its read and the target's losses. Reference models that did not ride are
        streamed now, on their own reads."""
        for model, path in self.loaded:
            check_stated_classes(getattr(model, "classes", None), label_map, path)
        target: list[FloatArray] = []
        confidences: list[FloatArray] = []
        for role, (scores, losses) in zip(ROLES, streamed, strict=True):
            target.append(scores.target_log_odds(losses))
            rows = scores.rider_log_odds(len(self.loaded))
            left = [index for index, row in enumerate(rows) if row is None]
            if left:
                alone = [self.loaded[index] for index in left]
                for index, row in zip(
                    left, log_odds_together(alone, tables, label_map, role, progress), strict=True
                ):
                    rows[index] = row
            confidences.append(np.vstack([row for row in rows if row is not None]))
        references = ReferenceConfidences(confidences[0], confidences[1], self.models)
        return AttackInputs((target[0], target[1]), references)


def partition_scores(
    target: LoadedModel,
    read: TableRead,
    references: Sequence[tuple[LoadedModel, Path, TableRead]],
) -> tuple[BatchScores, list[int]]:
    """What rides on the target's read ``read`` of one partition (the Dask engine's task): the
    target's log-odds and those of the ``references`` (each with its own read of the
    partition) that read it as the target does; and the indices of the others."""
    riders, others = [], []
    for index, (model, path, theirs) in enumerate(references):
        if theirs.columns == read.columns and conversion_key(model) == conversion_key(target):
            riders.append((index, (model, path), replace(theirs, loss="logit")))
        else:
            others.append(index)
    target_read = None if read.loss == "logit" else replace(read, loss="logit")
    return BatchScores(target, target_read, riders), others
