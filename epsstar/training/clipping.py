"""Exact clipped gradient sums for stacks of Linear layers, without per-example gradients.

For a ``Linear`` layer with input a_i and gradient g_i of example i's loss with
respect to the layer's output, example i's weight gradient is the outer product
g_i a_iᵀ, so its squared Frobenius norm is ‖g_i‖²‖a_i‖², and its bias gradient
adds ‖g_i‖². Summing over layers gives every per-example gradient norm from
the layer inputs A and output gradients G alone; with the clip factors
c_i = min(1, C/‖∇_i‖) the clipped sum of the weight gradients is
Σ_i c_i g_i a_iᵀ = (c ⊙ G)ᵀ A — one matrix product per layer, as in an ordinary
backward pass. G is obtained by one backward pass of the *sum* of per-example
losses with respect to the layer outputs: as examples do not interact in the
forward pass, row i of that gradient is g_i.

With microbatches the clipped unit is the mean gradient of a group of examples.
The group's weight gradient Σ_{i∈k} g_i a_iᵀ is no longer a rank-one product;
its norm is computed either by forming the group gradient (one batched matrix
product, cost ∝ B·p·d) or from Gram matrices, ‖Σ g_i a_iᵀ‖² = Σ_{i,j∈k}
(g_i·g_j)(a_i·a_j) (cost ∝ B·s·(p + d) for groups of size s), whichever is cheaper.

:func:`clipped_gradient_sum_vmap` computes the same per-example result with
``torch.func`` (it materialises per-example gradients); it is kept as an
independent implementation for tests and for the speed comparison in
``benchmarks/trainer_speed.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

from epsstar.training.models import MLP

__all__ = [
    "ClippedSum",
    "clip_factors",
    "clip_rows",
    "clipped_gradient_sum",
    "clipped_gradient_sum_vmap",
    "clipped_square_sum",
    "gradient_sum",
    "group_norms",
    "loss_sum",
]

#: Norms below this are treated as this value when forming C/‖∇‖ (the factor is then 1 anyway).
_TINY = 1e-12


@dataclass(frozen=True, slots=True)
class ClippedSum:
    """Gradients (in ``model.parameters()`` order) and the summed loss of a batch."""

    gradients: list[torch.Tensor]
    loss: float
    n_examples: int


def loss_sum(logits: torch.Tensor, labels: torch.Tensor, binary: bool) -> torch.Tensor:
    """Sum over the batch of the per-example loss: BCE-with-logits or cross-entropy."""
    if binary:
        return F.binary_cross_entropy_with_logits(
            logits.reshape(-1), labels.to(logits.dtype), reduction="sum"
        )
    return F.cross_entropy(logits, labels, reduction="sum")


def clip_factors(norms: torch.Tensor, clip: float) -> torch.Tensor:
    """c = min(1, C / ‖∇‖) elementwise (1 for a zero gradient)."""
    return (clip / norms.clamp_min(_TINY)).clamp(max=1.0)


def clip_rows(rows: torch.Tensor, clip: float) -> torch.Tensor:
    """Each row (one unit's flattened gradient) scaled to L2 norm at most ``clip``."""
    factors = clip_factors(rows.norm(dim=1), clip)
    return rows * factors.unsqueeze(1)


def _forward_capture(
    model: MLP, x: torch.Tensor
) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
    """Logits, the input of every Linear layer, and every Linear layer's output."""
    inputs: list[torch.Tensor] = []
    outputs: list[torch.Tensor] = []
    layers = model.linears
    activation = x
    for index, layer in enumerate(layers):
        inputs.append(activation)
        output = F.linear(activation, layer.weight, layer.bias)
        outputs.append(output)
        activation = torch.relu(output) if index < len(layers) - 1 else output
    return activation, inputs, outputs


def gradient_sum(model: MLP, x: torch.Tensor, y: torch.Tensor, binary: bool) -> ClippedSum:
    """The unclipped gradient of the summed loss (the non-private baseline)."""
    params = list(model.parameters())
    if x.shape[0] == 0:
        return ClippedSum([torch.zeros_like(p) for p in params], 0.0, 0)
    loss = loss_sum(model(x), y, binary)
    grads = torch.autograd.grad(loss, params)
    return ClippedSum(list(grads), float(loss.detach()), int(x.shape[0]))


def _pad_by_group(
    values: torch.Tensor,
    order: torch.Tensor,
    group_of_sorted: torch.Tensor,
    position: torch.Tensor,
    n_groups: int,
    width: int,
) -> torch.Tensor:
    padded = values.new_zeros((n_groups, width, values.shape[1]))
    padded[group_of_sorted, position] = values[order]
    return padded


def group_norms(
    grads_out: list[torch.Tensor],
    inputs: list[torch.Tensor],
    groups: torch.Tensor,
    n_groups: int,
    method: str,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Norm of every group's *summed* gradient, and the group sizes.

    ``method``: ``"gram"`` (pairwise products within groups), ``"outer"`` (form
    each group's gradient) or ``"auto"`` (the cheaper of the two per layer).
    """
    counts = torch.bincount(groups, minlength=n_groups)
    order = torch.argsort(groups, stable=True)
    group_of_sorted = groups[order]
    starts = torch.cumsum(counts, 0) - counts
    position = torch.arange(groups.shape[0], device=groups.device) - starts[group_of_sorted]
    width = int(counts.max())
    squared = torch.zeros(n_groups, dtype=grads_out[0].dtype, device=groups.device)
    for g, a in zip(grads_out, inputs, strict=True):
        p, d = g.shape[1], a.shape[1]
        g_pad = _pad_by_group(g, order, group_of_sorted, position, n_groups, width)
        a_pad = _pad_by_group(a, order, group_of_sorted, position, n_groups, width)
        bias = g_pad.sum(dim=1)
        squared += bias.pow(2).sum(dim=1)
        use_gram = width * (p + d) < p * d if method == "auto" else method == "gram"
        if use_gram:
            gram_g = torch.bmm(g_pad, g_pad.transpose(1, 2))
            gram_a = torch.bmm(a_pad, a_pad.transpose(1, 2))
            squared += (gram_g * gram_a).sum(dim=(1, 2))
        else:
            weight = torch.bmm(g_pad.transpose(1, 2), a_pad)
            squared += weight.pow(2).sum(dim=(1, 2))
    return squared.clamp_min(0.0).sqrt(), counts


def _example_norms(grads_out: Sequence[torch.Tensor], acts: Sequence[torch.Tensor]) -> torch.Tensor:
    """‖∇_i‖ per example from every Linear layer's output gradients g and inputs a: example
    i's weight gradient g_i a_iᵀ has squared norm ‖g_i‖²‖a_i‖², its bias gradient ‖g_i‖²."""
    squared = torch.zeros(
        grads_out[0].shape[0], dtype=grads_out[0].dtype, device=grads_out[0].device
    )
    for g, a in zip(grads_out, acts, strict=True):
        squared += g.pow(2).sum(dim=1) * (a.pow(2).sum(dim=1) + 1.0)
    return squared.sqrt()


def clipped_gradient_sum(
    model: MLP,
    x: torch.Tensor,
    y: torch.Tensor,
    binary: bool,
    clip: float,
    *,
    groups: torch.Tensor | None = None,
    n_groups: int = 0,
    group_norm_method: str = "auto",
) -> ClippedSum:
    """Σ_units min(1, C/‖∇_unit‖)·∇_unit for one batch, without per-example gradients.

    A unit is one example (``groups`` is None: ordinary DP-SGD) or, with
    ``groups`` (a group id in [0, n_groups) per example), the *mean* gradient of
    the examples sharing a group id. No noise is added here.
    ``group_norm_method`` chooses how group norms are computed (see
    :func:`group_norms`); every choice gives the same result.
    """
    params = list(model.parameters())
    if x.shape[0] == 0:
        return ClippedSum([torch.zeros_like(p) for p in params], 0.0, 0)
    logits, inputs, outputs = _forward_capture(model, x)
    loss = loss_sum(logits, y, binary)
    grads_out = torch.autograd.grad(loss, outputs)
    with torch.no_grad():
        acts = [a.detach() for a in inputs]
        if groups is None:
            weights = clip_factors(_example_norms(grads_out, acts), clip)
        else:
            norms, counts = group_norms(list(grads_out), acts, groups, n_groups, group_norm_method)
            sizes = counts.clamp_min(1).to(logits.dtype)
            factors = clip_factors(norms / sizes, clip) / sizes
            weights = factors[groups]
        gradients: list[torch.Tensor] = []
        for g, a in zip(grads_out, acts, strict=True):
            scaled = g * weights.unsqueeze(1)
            gradients.append(scaled.T @ a)
            gradients.append(scaled.sum(dim=0))
    return ClippedSum(gradients, float(loss.detach()), int(x.shape[0]))


def clipped_square_sum(
    model: MLP, x: torch.Tensor, y: torch.Tensor, binary: bool, clip: float
) -> list[torch.Tensor]:
    """Σ_i (min(1, C/‖∇_i‖)·∇_i)² elementwise, per parameter, without per-example gradients.

    Example i's weight gradient is g_i a_iᵀ, so the sum of its clipped squares is
    (c² ⊙ G²)ᵀ A² (squares elementwise) and the bias's Σ_i c_i² g_i²: the per-coordinate
    variance of a Poisson batch's clipped sum, up to the factor q(1 − q).
    """
    params = list(model.parameters())
    if x.shape[0] == 0:
        return [torch.zeros_like(p) for p in params]
    logits, inputs, outputs = _forward_capture(model, x)
    grads_out = torch.autograd.grad(loss_sum(logits, y, binary), outputs)
    with torch.no_grad():
        acts = [a.detach() for a in inputs]
        factors = clip_factors(_example_norms(grads_out, acts), clip).pow(2)
        sums: list[torch.Tensor] = []
        for g, a in zip(grads_out, acts, strict=True):
            scaled = g.pow(2) * factors.unsqueeze(1)
            sums.append(scaled.T @ a.pow(2))
            sums.append(scaled.sum(dim=0))
    return sums


def clipped_gradient_sum_vmap(
    model: MLP, x: torch.Tensor, y: torch.Tensor, binary: bool, clip: float
) -> ClippedSum:
    """Per-example clipped sum via ``torch.func.vmap`` (materialises per-example gradients)."""
    names = [name for name, _ in model.named_parameters()]
    params = {name: p.detach() for name, p in model.named_parameters()}
    if x.shape[0] == 0:
        return ClippedSum([torch.zeros_like(params[n]) for n in names], 0.0, 0)

    def one_loss(
        weights: dict[str, torch.Tensor], xi: torch.Tensor, yi: torch.Tensor
    ) -> torch.Tensor:
        logits = functional_call(model, weights, (xi.unsqueeze(0),))
        return loss_sum(logits, yi.unsqueeze(0), binary)

    per_example = vmap(grad(one_loss), in_dims=(None, 0, 0))(params, x, y)
    with torch.no_grad():
        squared = sum(per_example[n].flatten(1).pow(2).sum(dim=1) for n in names)
        assert isinstance(squared, torch.Tensor)
        factors = clip_factors(squared.sqrt(), clip)
        gradients = [torch.tensordot(factors, per_example[n], dims=1) for n in names]
        loss = loss_sum(model(x), y, binary)
    return ClippedSum(gradients, float(loss), int(x.shape[0]))
