"""The stacked step's kernel choices give the numbers of the plain ones.

A step takes its models a few at a time (to keep their activations in the cache) and
computes products with one output column transposed; neither may change a model's numbers
beyond float32 rounding, and a model's numbers may not depend on the models beside it.
"""

from __future__ import annotations

import dataclasses
import threading

import pytest
import torch

import epsstar.training.batched as batched
import epsstar.training.stacked as stacked
from epsstar.exceptions import InvalidInputError
from epsstar.training.data.tables import TabularData
from epsstar.training.models import MLP
from epsstar.training.stacked import StackedBatch, StackedMLP, stacked_gradients
from epsstar.training.trainer import TrainingConfig


def _stack_and_batch(k: int, rows: int, binary: bool) -> tuple[StackedMLP, StackedBatch]:
    outputs = 1 if binary else 3
    networks = [
        MLP(6, outputs, (5, 4), generator=torch.Generator().manual_seed(seed)) for seed in range(k)
    ]
    generator = torch.Generator().manual_seed(99)
    features = torch.randn(k, rows, 6, generator=generator)
    labels = torch.randint(0, 2 if binary else 3, (k, rows), generator=generator)
    mask = (torch.rand(k, rows, generator=generator) < 0.8).float()
    return StackedMLP.from_networks(networks), StackedBatch(features, labels, mask)


def _autograd_update(network: MLP, batch: StackedBatch, k: int, binary: bool) -> torch.Tensor:
    """Model k's clipped gradient sum (C = 1) over 7, computed example by example."""
    total = [torch.zeros_like(p) for p in network.parameters()]
    for i in range(batch.features.shape[1]):
        if batch.mask[k, i] == 0:
            continue
        network.zero_grad()
        logits = network(batch.features[k, i : i + 1])
        label = batch.labels[k, i : i + 1]
        if binary:
            loss = torch.nn.functional.binary_cross_entropy_with_logits(
                logits.squeeze(1), label.float(), reduction="sum"
            )
        else:
            loss = torch.nn.functional.cross_entropy(logits, label, reduction="sum")
        loss.backward()
        grads = [p.grad.detach().clone() for p in network.parameters() if p.grad is not None]
        norm = torch.sqrt(sum((g**2).sum() for g in grads))
        factor = min(1.0, 1.0 / max(float(norm), 1e-12))
        total = [t + factor * g for t, g in zip(total, grads, strict=True)]
    return torch.cat([(t / 7.0).flatten() for t in total])


def _flat(gradients: list[torch.Tensor], k: int) -> torch.Tensor:
    pieces = []
    for index, tensor in enumerate(gradients):
        own = tensor[k]
        pieces.append((own.mT if index % 2 == 0 else own).flatten())  # weights are in × out
    return torch.cat(pieces)


@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize("cache_bytes", [1, 2**30])
def test_every_model_gets_its_own_clipped_gradient_one_or_all_at_a_time(
    binary: bool, cache_bytes: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One model per pass (a cache of 1 byte) or all at once, each model's update is the
    per-example clipped sum autograd gives, the one-column products included (binary)."""
    monkeypatch.setattr(stacked, "_CACHE_BYTES", cache_bytes)
    k = 5
    stack, batch = _stack_and_batch(k, 12, binary)
    clip = torch.ones(k)
    normaliser = torch.full((k,), 7.0)
    update = stacked_gradients(stack, batch, binary, clip, normaliser)
    for model in range(k):
        network = stack.copy_into(model, MLP(6, 1 if binary else 3, (5, 4)))
        expected = _autograd_update(network, batch, model, binary)
        torch.testing.assert_close(_flat(update.gradients, model), expected, rtol=0, atol=1e-6)


def test_a_models_update_does_not_depend_on_the_models_beside_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Model 2 stepped in a stack of five, two at a time, and alone: the same update, noise
    included (a pass that mixed up its models' slices would give model 2 another's)."""
    monkeypatch.setattr(stacked, "_CACHE_BYTES", 2 * 12 * (6 + 5 + 4 + 1) * 4 * 2)
    stack, batch = _stack_and_batch(5, 12, True)
    noise = [
        torch.randn(p.shape, generator=torch.Generator().manual_seed(3)) for p in stack.parameters()
    ]
    clip, normaliser = torch.linspace(0.5, 1.5, 5), torch.linspace(5.0, 9.0, 5)
    together = stacked_gradients(stack, batch, True, clip, normaliser, noise)
    two = slice(2, 3)
    alone = stacked_gradients(
        stack.part(two), batch.part(two), True, clip[two], normaliser[two], [n[two] for n in noise]
    )
    for mine, own in zip(together.gradients, alone.gradients, strict=True):
        torch.testing.assert_close(mine[two], own, rtol=0, atol=1e-7)
    torch.testing.assert_close(together.losses[two], alone.losses, rtol=0, atol=1e-6)


def test_an_error_drawing_ahead_reaches_the_caller_and_leaves_no_thread(
    binary_table: TabularData, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next step's draws are made on a helper thread: an error there is raised by
    train_many as it is, and the thread is gone when train_many returns."""
    calls = [0]
    draw = batched._draw

    def failing(*args: object) -> object:
        calls[0] += 1
        if calls[0] == 3:
            raise InvalidInputError("the third draw fails")
        return draw(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(batched, "_draw", failing)
    before = threading.active_count()
    config = TrainingConfig(
        standardise_on="data", epochs=1, batch_size=100, hidden=(4,), noise_multiplier=1.0
    )
    configs = [dataclasses.replace(config, seed=seed) for seed in range(2)]
    with pytest.raises(InvalidInputError, match="the third draw fails"):
        batched.train_many(binary_table, configs)
    assert calls[0] == 3
    assert threading.active_count() == before
