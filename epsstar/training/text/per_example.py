"""The summed gradient of a Poisson batch of records, each example's clipped (DP-SGD).

The model is a pure function of its trained tensors (``torch.func.functional_call``);
``torch.func.vmap(torch.func.grad_and_value(loss))`` gives every record's gradient of its own
loss (the mean loss of its tokens) in one call, each example's gradient is scaled by
``min(1, C/‖∇_i‖)`` over all trained tensors together
(:func:`~epsstar.training.clipping.clip_factors`), and the scaled gradients are summed. The
batch goes through the model :func:`physical_batch` records at a time, so that the
per-example gradients held at once (``records × trained parameters`` floats) fit in memory:
the sum is the same up to the order of the additions. Without clipping (a run without
privacy) the gradient of the batch's summed loss is taken directly, without per-example
gradients.

Records are padded on the right with token 0 and scored without an attention mask: in a
causal model no token attends to those after it, so the padding changes nothing at the real
positions (as the audit scores them, :mod:`epsstar.loaders.huggingface.model`); the loss
counts the real positions only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import torch
from numpy.typing import NDArray

from epsstar.training.clipping import clip_factors

__all__ = [
    "PER_EXAMPLE_BYTES",
    "Batch",
    "Params",
    "RecordLoss",
    "SummedGradient",
    "padded",
    "physical_batch",
    "summed_gradient",
]

#: The trained tensors by name.
Params = dict[str, torch.Tensor]
#: One record's loss: ``(params, ids (T,), real (T,)) -> scalar``.
RecordLoss = Callable[[Params, torch.Tensor, torch.Tensor], torch.Tensor]
#: Memory for the per-example gradients of one physical batch (the automatic choice).
PER_EXAMPLE_BYTES: Final = 1 << 30
_FLOAT_BYTES: Final = 4


@dataclass(frozen=True, slots=True)
class Batch:
    """Records padded to one length: ``ids`` ``(B, T)`` and ``real`` (not padding) ``(B, T)``."""

    ids: torch.Tensor
    real: torch.Tensor


@dataclass(frozen=True, slots=True)
class SummedGradient:
    """Σ over the batch of each record's (clipped) gradient, and Σ of the records' losses."""

    gradients: Params
    loss: float


def padded(records: Sequence[NDArray[np.int64]], device: torch.device) -> Batch:
    """``records`` padded on the right with token 0 (see the module)."""
    width = max(len(ids) for ids in records)
    ids = np.zeros((len(records), width), dtype=np.int64)
    real = np.zeros((len(records), width), dtype=np.bool_)
    for row, tokens in enumerate(records):
        ids[row, : len(tokens)] = tokens
        real[row, : len(tokens)] = True
    return Batch(torch.from_numpy(ids).to(device), torch.from_numpy(real).to(device))


def physical_batch(trained_parameters: int, given: int | None) -> int:
    """``given``, else as many records as hold their per-example gradients (twice: the
    gradients and their scaled copies) in :data:`PER_EXAMPLE_BYTES`, at least one."""
    if given is not None:
        return given
    return max(1, PER_EXAMPLE_BYTES // (2 * _FLOAT_BYTES * max(1, trained_parameters)))


def _clipped(loss: RecordLoss, params: Params, batch: Batch, clip: float) -> SummedGradient:
    per_example, losses = torch.func.vmap(torch.func.grad_and_value(loss), in_dims=(None, 0, 0))(
        params, batch.ids, batch.real
    )
    squared = sum(g.flatten(1).pow(2).sum(dim=1) for g in per_example.values())
    assert isinstance(squared, torch.Tensor)
    factors = clip_factors(squared.sqrt(), clip)
    summed = {name: torch.tensordot(factors, g, dims=1) for name, g in per_example.items()}
    return SummedGradient(summed, float(losses.sum()))


def _unclipped(loss: RecordLoss, params: Params, batch: Batch) -> SummedGradient:
    def total(values: Params) -> tuple[torch.Tensor, torch.Tensor]:
        losses = torch.func.vmap(loss, in_dims=(None, 0, 0))(values, batch.ids, batch.real)
        return losses.sum(), losses.sum()

    gradients, value = torch.func.grad(total, has_aux=True)(params)
    return SummedGradient(gradients, float(value))


def summed_gradient(
    loss: RecordLoss,
    params: Params,
    records: Sequence[NDArray[np.int64]],
    *,
    clip: float | None,
    physical: int,
    device: torch.device,
) -> SummedGradient:
    """Σ over ``records`` of each one's gradient of ``loss`` at ``params``, clipped to
    ``clip`` (None: unclipped), ``physical`` records through the model at a time."""
    sums = {name: torch.zeros_like(value) for name, value in params.items()}
    total = 0.0
    for start in range(0, len(records), physical):
        batch = padded(records[start : start + physical], device)
        part = (
            _unclipped(loss, params, batch) if clip is None else _clipped(loss, params, batch, clip)
        )
        for name, gradient in part.gradients.items():
            sums[name] += gradient
        total += part.loss
    return SummedGradient(sums, total)
