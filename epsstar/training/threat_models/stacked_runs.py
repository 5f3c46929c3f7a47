"""Many training runs of an audit trained together: :func:`run_stack` of :class:`OwnTrainer`.

The many-run audit (§III-C of Nasr et al. 2021, "Adversary Instantiation: Lower Bounds for
Differentially Private Machine Learning") trains R runs with a canary and R without, each on its own
table (``--train``'s rows and the canaries it includes, shuffled with its seed). Those runs take the
same steps (same network, epochs, clipping and optimiser, and one privacy plan, made for
``--train``'s rows whatever canaries a run includes), which is what
:func:`epsstar.training.batched.train_many` steps as one batched computation. Each run's table is
read as the run alone reads it, the tables are laid end to end, and run k trains on its own rows
(a :class:`~epsstar.training.batched.RowSubset`) with its own seed and that plan: so its model
is the model of the run alone, up to the order of float32 sums inside the batched products
(docs/many-models.md), and so are its canaries' scores.

Only the black-box threat models (the final model's losses) are trained this way: the
white-box ones watch every step of one run, and a broken trainer's noise or clipping is a hook
of the one-run trainer, so those runs go one at a time. Runs whose tables
are encoded differently (a canary brings a category or a class that ``--train`` lacks) are
trained one at a time too. Whether runs stack at all is
:meth:`OwnTrainer.stack_size`'s to say.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

import numpy as np

from epsstar.audit.training_audit.procedure import RunRequest, RunScores
from epsstar.training.batched import RowSubset, train_many
from epsstar.training.data.tables import TabularData, load_table
from epsstar.training.models import Standardiser
from epsstar.training.trainer import PrivacyPlan, TrainedModel, TrainingConfig

__all__ = ["StackedTrainer", "run_stack"]


class StackedTrainer(Protocol):
    """What :func:`run_stack` asks of the trainer (:class:`OwnTrainer`)."""

    @property
    def config(self) -> TrainingConfig: ...

    @property
    def label_column(self) -> str: ...

    @property
    def features(self) -> tuple[str, ...] | None: ...

    def plan(self, base_records: int) -> PrivacyPlan | None: ...

    def settings(self) -> TrainingConfig: ...

    def shared_standardiser(self, data: TabularData) -> Standardiser | None: ...

    def run(self, request: RunRequest) -> RunScores: ...

    def scored(
        self, request: RunRequest, data: TabularData, trained: TrainedModel, *, seconds: float
    ) -> RunScores: ...


def _laid_end_to_end(tables: Sequence[TabularData]) -> tuple[TabularData, list[RowSubset]]:
    """One table holding every run's rows in turn, and the rows of each run."""
    sizes = [table.n_records for table in tables]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    whole = replace(
        tables[0],
        features=np.concatenate([table.features for table in tables]),
        labels=np.concatenate([table.labels for table in tables]),
        source="the runs' tables",
    )
    subsets = [
        RowSubset(np.arange(starts[k], starts[k + 1], dtype=np.int64), table.source)
        for k, table in enumerate(tables)
    ]
    return whole, subsets


def run_stack(trainer: StackedTrainer, requests: Sequence[RunRequest]) -> list[RunScores]:
    """The runs of ``requests`` (see the module), in order. Each run's ``seconds`` is its
    share of the stack's time (the stack's seconds over its runs)."""
    if len(requests) < 2:
        return [trainer.run(request) for request in requests]
    start = time.perf_counter()
    tables = [
        load_table(r.train, trainer.label_column, features=trainer.features) for r in requests
    ]
    encoded = {(table.feature_names, table.classes) for table in tables}
    if len(encoded) > 1:
        return [trainer.run(request) for request in requests]
    whole, subsets = _laid_end_to_end(tables)
    configs = [replace(trainer.settings(), seed=request.seed) for request in requests]
    plans = [trainer.plan(request.base_records) for request in requests]
    standardiser = trainer.shared_standardiser(whole)
    models = train_many(whole, configs, subsets=subsets, plans=plans, standardiser=standardiser)
    seconds = (time.perf_counter() - start) / len(requests)
    return [
        trainer.scored(request, table, model, seconds=seconds)
        for request, table, model in zip(requests, tables, models, strict=True)
    ]
