"""Text records scored on a Dask cluster: one task per chunk of a data set's records.

A text audit reads one file per side. Each task scores one range of its chunks
(:func:`~epsstar.audit.engines.text_scoring.chunk_ranges`: a chunk of
:data:`~epsstar.audit.data.text_records.TEXT_CHUNK_ROWS` records, the last range to the end)
with the single-process code (:func:`~epsstar.audit.engines.text_scoring.score_chunks`), so
every model call holds the same pieces as in one process; the client joins the ranges in
order (:func:`~epsstar.audit.engines.text_scoring.joined_scores`). The worker loads the
language model and each reference model once per process
(:mod:`epsstar.audit.engines.worker_models`: keyed by every file's SHA-256, checked
against the client's), and checks that its copy of the data file has the SHA-256 the client
read. What travels back is each record's statistics (about 8 bytes each, 7 numbers) and,
per reference model, its mean token loss.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

import numpy as np

from epsstar.audit.attacks.sequences import SequenceStatistics
from epsstar.audit.data.reading import Role
from epsstar.audit.engines.dask_audit import PartitionProgress
from epsstar.audit.engines.text_scoring import (
    ChunkRange,
    ScoredChunks,
    ScoringPlan,
    chunk_ranges,
    joined_scores,
    score_chunks,
)
from epsstar.audit.engines.worker_models import ModelSpec, checked_model
from epsstar.audit.model.text_model import TextModel, text_model_of
from epsstar.audit.output.text_result import WindowsUsed
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.plumbing.files.digests import sha256_of
from epsstar.statistics._validation import FloatArray

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.audit.engines.dask_engine import Engine, TaskOutcome

__all__ = ["TextData", "TextOnDask", "score_range", "score_text_on_dask"]

ROLES: Final[tuple[Role, Role]] = ("train", "population")


@dataclass(frozen=True, slots=True)
class TextData:
    """One side's file of text records as the client read it: its path, SHA-256, column of
    text (``None``: one record per line) and records."""

    path: Path
    sha256: str
    column: str | None
    records: int


@dataclass(frozen=True, slots=True)
class TextOnDask:
    """Both sides scored on the cluster: each side's statistics and records that needed
    windows, each reference model's mean token losses per side, and the tasks per side."""

    scored: Mapping[Role, tuple[SequenceStatistics, WindowsUsed]]
    reference_losses: Mapping[Role, tuple[FloatArray, ...]]
    tasks: Mapping[Role, int]


#: The data files this worker process checked: (path, size, mtime) -> SHA-256.
_CHECKED: dict[tuple[str, int, int], str] = {}


def _checked_data(data: TextData) -> None:
    """Refuse a worker's copy of the data file that differs from the client's (hashed once
    per process and version of the file)."""
    try:
        stat = os.stat(data.path)
        key = (os.fspath(data.path), stat.st_size, stat.st_mtime_ns)
        found = _CHECKED[key] if key in _CHECKED else sha256_of(data.path)
    except OSError as error:
        raise InputFileError(
            f"a worker cannot read a data file ({error}). Found {str(data.path)!r}."
        ) from None
    _CHECKED[key] = found
    if found != data.sha256:
        raise InputFileError(
            f"a worker's copy of a data file differs from the one audited here (sha256 "
            f"{found[:16]}... instead of {data.sha256[:16]}...). Found {str(data.path)!r}."
        )


def _text_model(spec: ModelSpec, what: str) -> TextModel:
    """The language model of ``spec``, loaded once per worker process."""
    try:
        loaded = checked_model(spec)
        return text_model_of(loaded.model, loaded.loader.name)
    except (InvalidInputError, InputFileError) as error:
        if what == "model":
            raise
        raise type(error)(f"{what} {str(spec.file.path)!r}: {error}") from None


def score_range(
    model: ModelSpec,
    references: tuple[ModelSpec, ...],
    data: TextData,
    plan: ScoringPlan,
    chunks: ChunkRange,
) -> tuple[ScoredChunks, tuple[FloatArray, ...]]:
    """Dask task: the chunks ``chunks`` of ``data`` scored by the model as ``plan`` says,
    and each reference model's mean token loss on them."""
    _checked_data(data)
    scored = score_chunks(_text_model(model, "model"), data.path, data.column, plan, chunks=chunks)
    losses = []
    for spec in references:
        theirs = score_chunks(
            _text_model(spec, "reference model"),
            data.path,
            data.column,
            plan.loss_only,
            chunks=chunks,
        )
        losses.append(np.concatenate(theirs.loss))
    return scored, tuple(losses)


class _Collected:
    """The ranges' results as they arrive, with progress told as each finishes."""

    def __init__(self, roles: list[Role], progress: object) -> None:
        self.roles = roles
        self.totals = {role: self.roles.count(role) for role in ROLES}
        self.done = dict.fromkeys(ROLES, 0)
        self.rows = dict.fromkeys(ROLES, 0)
        self.parts: dict[int, tuple[ScoredChunks, tuple[FloatArray, ...]]] = {}
        self.progress = progress if isinstance(progress, PartitionProgress) else None
        self.started = time.perf_counter()

    def __call__(self, outcome: TaskOutcome[tuple[ScoredChunks, tuple[FloatArray, ...]]]) -> None:
        role = self.roles[outcome.index]
        self.done[role] += 1
        if outcome.value is not None:
            self.parts[outcome.index] = outcome.value
            self.rows[role] += sum(loss.size for loss in outcome.value[0].loss)
        if self.progress is not None:
            seconds = time.perf_counter() - self.started
            self.progress.partition_done(
                role, self.done[role], self.totals[role], self.rows[role], seconds
            )


def score_text_on_dask(
    model: ModelSpec,
    references: Sequence[ModelSpec],
    data: Mapping[Role, TextData],
    plan: ScoringPlan,
    engine: Engine,
    *,
    context: int,
    progress: object = None,
) -> TextOnDask:
    """Both sides of a text audit scored on ``engine``'s cluster, a task per range of
    chunks (see the module docstring); ``context`` is the model's, ``progress``, if it is a
    :class:`~epsstar.audit.engines.dask_audit.PartitionProgress`, is told as ranges finish."""
    from epsstar.audit.engines.dask_engine import dask_client, run_tasks

    ranges = {role: chunk_ranges(data[role].records) for role in ROLES}
    tasks = [
        (model, tuple(references), data[role], plan, chunks)
        for role in ROLES
        for chunks in ranges[role]
    ]
    roles = [role for role in ROLES for _ in ranges[role]]
    collected = _Collected(roles, progress)
    with dask_client(engine) as client:
        outcomes = run_tasks(client, score_range, tasks, collected, name="epsstar-text")
    failed = next((outcome for outcome in outcomes if outcome.error is not None), None)
    if failed is not None:
        where = str(tasks[failed.index][2].path)
        error = str(failed.error)
        raise InvalidInputError(error if error.startswith(where) else f"{where}: {error}")
    scored, reference_losses = {}, {}
    for role in ROLES:
        mine = [collected.parts[i] for i in range(len(tasks)) if collected.roles[i] == role]
        scored[role] = joined_scores([part for part, _ in mine], context)
        reference_losses[role] = tuple(
            np.concatenate([losses[index] for _, losses in mine])
            for index in range(len(references))
        )
    return TextOnDask(scored, reference_losses, {role: len(ranges[role]) for role in ROLES})
