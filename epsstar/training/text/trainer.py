"""DP-SGD (or the same loop without privacy) over a causal language model's records.

One step, as for tables (:mod:`epsstar.training.trainer`): every record joins the batch
independently with probability q = B/n (Poisson sampling); each record's gradient of its mean
token loss is clipped to L2 norm C over all trained tensors (:mod:`.per_example`);
N(0, σ²C²) is added to every coordinate of the sum; the sum is divided by q·n and handed to
AdamW (torch's defaults: β = (0.9, 0.999), weight decay 0.01). Adam only post-processes the
noisy sums, so the guarantee is the accountant's for the Gaussian steps (DP-Adam). σ, q and
the steps come from :func:`~epsstar.training.trainer.plan_privacy`, the tables' plan and
accountant. Without privacy the loop skips the clipping and the noise.

The trained tensors are every weight of the model, or a LoRA adapter's matrices
(:mod:`.lora`); the model runs in evaluation mode (no dropout), so a record's gradient is a
function of the weights alone. The batches, the adapter's first ``A`` and the noise come from
one seeded CPU :class:`torch.Generator`: the same seed gives the same weights, bit for bit on
the CPU with the same threads.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from epsstar.training.results import EpochStats
from epsstar.training.text.lora import LoraLayout
from epsstar.training.text.per_example import Params, RecordLoss, summed_gradient
from epsstar.training.text.records import TokenisedRecords
from epsstar.training.text.settings import TextTrainingConfig
from epsstar.training.trainer import PrivacyPlan, schedule

__all__ = ["FineTuned", "fine_tune", "record_loss"]


@dataclass(frozen=True, slots=True)
class FineTuned:
    """The model after training (its own weights updated unless an adapter was trained),
    the adapter's layout and matrices (None: none), and the run's epochs."""

    model: Any
    adapter: LoraLayout | None
    adapter_params: Params | None
    history: tuple[EpochStats, ...]
    physical_batch: int
    seconds: float


def record_loss(model: Any, layout: LoraLayout | None) -> RecordLoss:
    """One record's mean token loss, as a function of the trained tensors: every weight
    (``layout`` None), or a LoRA adapter's matrices on the model's own weights."""
    base = {name: value.detach() for name, value in model.named_parameters()}

    def loss(params: Params, ids: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
        weights = params if layout is None else layout.merged(base, params)
        logits = torch.func.functional_call(model, weights, (ids[None],), {"use_cache": False})
        log_p = torch.log_softmax(logits.logits[0, :-1].float(), dim=-1)
        picked = log_p.gather(-1, ids[1:, None])[:, 0]
        counted = real[1:].to(picked.dtype)
        return -(picked * counted).sum() / counted.sum().clamp_min(1.0)

    return loss


def _trained(model: Any, layout: LoraLayout | None, generator: torch.Generator) -> Params:
    if layout is not None:
        device = next(model.parameters()).device
        return {name: value.to(device) for name, value in layout.initial(generator).items()}
    return {name: value.detach().clone() for name, value in model.named_parameters()}


def _noised(
    summed: Params, noise_std: float, normaliser: float, generator: torch.Generator
) -> Params:
    """(Σ + N(0, noise_std²)) / normaliser, the noise drawn on the CPU tensor by tensor."""
    out = {}
    for name, total in summed.items():
        if noise_std > 0.0:
            noise = torch.randn(total.shape, generator=generator, dtype=total.dtype)
            total = total + noise.mul_(noise_std).to(total.device)
        out[name] = total / normaliser
    return out


def fine_tune(
    model: Any,
    records: TokenisedRecords,
    config: TextTrainingConfig,
    plan: PrivacyPlan | None,
    *,
    physical: int,
    layout: LoraLayout | None = None,
    on_epoch: Callable[[EpochStats], None] | None = None,
) -> FineTuned:
    """Train ``model`` on ``records`` as the module says; ``plan`` None trains without
    privacy. The model's weights are updated in place (unless ``layout`` trains an adapter)."""
    started = time.perf_counter()
    device = next(model.parameters()).device
    model.eval().requires_grad_(False)
    generator = torch.Generator().manual_seed(config.seed)
    params = _trained(model, layout, generator)
    optimiser = torch.optim.AdamW(list(params.values()), lr=config.lr)
    loss = record_loss(model, layout)
    n = records.count
    if plan is None:
        rate, per_epoch = schedule(config.schedule_config(), n)
        clip, noise_std, normaliser = None, 0.0, rate * n
    else:
        rate, per_epoch = plan.sampling_rate, plan.steps_per_epoch
        clip, noise_std = config.clip, plan.noise_multiplier * config.clip
        normaliser = plan.expected_batch_size
    history = []
    for epoch in range(config.epochs):
        epoch_started = time.perf_counter()
        losses, sampled = 0.0, 0
        for _ in range(per_epoch):
            rows = torch.nonzero(torch.rand(n, generator=generator) < rate).flatten().tolist()
            summed = summed_gradient(
                loss,
                params,
                [records.ids[row] for row in rows],
                clip=clip,
                physical=physical,
                device=device,
            )
            update = _noised(summed.gradients, noise_std, normaliser, generator)
            for name, value in params.items():
                value.grad = update[name]
            optimiser.step()
            losses, sampled = losses + summed.loss, sampled + len(rows)
        done = (epoch + 1) * per_epoch
        history.append(
            EpochStats(
                epoch=epoch + 1,
                epochs=config.epochs,
                loss=losses / max(1, sampled),
                epsilon=None if plan is None else plan.epsilon_after(done),
                seconds=time.perf_counter() - epoch_started,
            )
        )
        if on_epoch is not None:
            on_epoch(history[-1])
    if layout is None:
        with torch.no_grad():
            for name, value in params.items():
                model.get_parameter(name).copy_(value)
    return FineTuned(
        model,
        layout,
        None if layout is None else {k: v.detach() for k, v in params.items()},
        tuple(history),
        physical,
        time.perf_counter() - started,
    )
