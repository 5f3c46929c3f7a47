"""A privacy plan fixes the run's schedule: planned for N records, a run samples at q = B/N,
takes round(N/B) steps an epoch and divides its noisy sum by q·N, whatever the number of rows
of the table it is handed, in the one-model trainer and in the batched one.

Under add/remove-one adjacency the accountant's analysis assumes a schedule that does not depend
on the private table: read from a table of N + 1 rows, q, the steps and σ would tell the table
holding one record more from the other.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
import torch

from epsstar.training import batched
from epsstar.training.batched import RowSubset, train_many
from epsstar.training.data.tables import TabularData
from epsstar.training.trainer import (
    StepHooks,
    TrainedModel,
    TrainingConfig,
    plan_privacy,
    train,
)

CONFIG = TrainingConfig(
    standardise_on="data",
    epochs=3,
    batch_size=2,
    lr=0.5,
    momentum=0.0,
    noise_multiplier=1.0,
    delta=1e-5,
)


def _table(n: int, seed: int) -> TabularData:
    """n records of 3 features, labels alternating 0 and 1."""
    return TabularData(
        features=np.random.default_rng(seed).normal(size=(n, 3)),
        labels=np.arange(n, dtype=np.int64) % 2,
        feature_names=("a", "b", "c"),
        classes=("0", "1"),
        label_column="label",
        source=f"{n} records",
    )


def _weights(trained: TrainedModel) -> np.ndarray:
    network = trained.model.network
    return torch.cat([p.detach().double().flatten() for p in network.parameters()]).numpy()


@pytest.mark.parametrize(
    ("planned", "batch_size", "per_epoch_on_more"),
    # q = 1 and 1 step an epoch for 2 records; a table of 3 would give q = 2/3 and 2 steps
    # (the audit's finding). q = 1/4 and 4 steps for 4 records; 5 would give 1/5 and 5.
    [(2, 2, 2), (4, 1, 5)],
)
def test_a_plan_for_n_records_schedules_a_run_on_n_plus_one(
    planned: int, batch_size: int, per_epoch_on_more: int
) -> None:
    config = dataclasses.replace(CONFIG, batch_size=batch_size)
    plan = plan_privacy(config, planned)
    assert plan is not None
    assert plan.records == planned
    assert plan.sampling_rate == batch_size / planned
    assert plan.steps_per_epoch == planned // batch_size
    data = _table(planned + 1, seed=4)
    batches: list[int] = []
    hooks = StepHooks(sampled=lambda step, network, rows: batches.append(int(rows.numel())))
    trained = train(data, config, plan=plan, hooks=hooks)
    steps = trained.result.hyperparameters
    assert steps.sampling_rate == plan.sampling_rate
    assert steps.steps_per_epoch == plan.steps_per_epoch
    assert steps.steps == plan.steps == config.epochs * planned // batch_size
    assert steps.update_normaliser == plan.expected_batch_size == batch_size
    assert len(batches) == plan.steps  # the steps taken, not only the ones recorded
    if plan.sampling_rate == 1.0:
        assert batches == [planned + 1] * plan.steps  # every row of the larger table, each step
    privacy = trained.result.privacy
    assert privacy is not None
    assert privacy.sampling_rate == plan.sampling_rate
    assert privacy.epsilon == plan.epsilon_after(plan.steps)
    # Planned on its own size, the same table takes another schedule.
    own = train(data, config).result.hyperparameters
    assert own.sampling_rate == batch_size / (planned + 1)
    assert own.steps_per_epoch == per_epoch_on_more


def test_the_batched_trainer_follows_the_plans_given_and_stacks_their_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Runs on 2 and on 3 rows with the plan for 2 take the same steps, so they are stepped as
    one stack, each the model the one-model trainer gives with that plan."""
    data = _table(5, seed=5)
    subsets = [
        RowSubset(np.arange(0, 2, dtype=np.int64), "without the canary"),
        RowSubset(np.arange(2, 5, dtype=np.int64), "with the canary"),
    ]
    configs = [dataclasses.replace(CONFIG, seed=seed) for seed in (1, 2)]
    plan = plan_privacy(CONFIG, 2)
    stacks: list[int] = []
    stepped = batched._train_stack

    def counted(data: TabularData, members: list[Any], *rest: Any) -> list[TrainedModel]:
        stacks.append(len(members))
        return stepped(data, members, *rest)

    monkeypatch.setattr(batched, "_train_stack", counted)
    models = train_many(data, configs, subsets=subsets, plans=[plan, plan])
    assert stacks == [2]
    for model, config, subset in zip(models, configs, subsets, strict=True):
        steps = model.result.hyperparameters
        assert (steps.sampling_rate, steps.steps_per_epoch, steps.update_normaliser) == (
            1.0,
            1,
            2.0,
        )
        alone = train(subset.of(data), config, plan=plan)
        assert model.result.hyperparameters == alone.result.hyperparameters
        assert model.result.privacy == alone.result.privacy
        np.testing.assert_allclose(_weights(model), _weights(alone), rtol=0, atol=1e-5)
