"""K MLPs of one architecture as stacked weight tensors, and their noisy clipped gradients.

Layer l of model k holds the weight W_l[k] and the bias b_l[k]; the stack keeps one
(K, in, out) tensor — each model's ``nn.Linear`` weight transposed — and one (K, out)
tensor per layer, so that a step of all K models is one batched matrix product per layer
(``torch.baddbmm``/``torch.bmm``) instead of K small ones: the small products of one
Adult-size model leave most of a core's vector units idle, K of them at once do not. The
weights are kept as inputs × outputs because every product of a step then reads and writes
them as they lie: the forward pass A·W, the weight gradient Aᵀ·G, which on the CPU is faster
in this orientation than (Gᵀ·A) (26.7 against 21.1 G multiply-adds/s at (32, 290, 100) ×
(32, 290, 108), one thread), and the momentum update, elementwise on tensors of one layout.

A step's batch is a (K, B, d) tensor: model k's Poisson-sampled rows, padded to the
largest batch of the step with rows whose ``mask`` is 0. A padded row's loss gradient is
set to 0, so it adds nothing to any sum, norm or group.

The gradients are those of :mod:`epsstar.training.clipping`, computed by hand for the
stack rather than by autograd (the network is Linear → ReLU → … → Linear, whose backward
pass is three products per layer). For the *sum* of per-example losses, the gradient
with respect to the logits z of example i is σ(z_i) − y_i (binary cross-entropy on one
logit) or softmax(z_i) − e_{y_i} (cross-entropy); for a layer below, g_l = (g_{l+1} W_{l+1})
⊙ 1[z_l > 0]. Example i's gradient norm is Σ_l ‖g_{l,i}‖²(‖a_{l,i}‖² + 1) with a_l the
layer's input, its clip factor c_i = min(1, C_k/‖∇_i‖), and layer l's weight gradient
Aᵀ_l (c ⊙ G_l)/ν_k + noise — per model, one ``baddbmm`` for all K, whose added term is the
noise, already scaled by σ_k C_k/ν_k (ν_k the model's normaliser). Microbatches are
clipped as groups of the flattened (K·B) batch, group j of model k being group k·m + j,
by :func:`epsstar.training.clipping.group_norms`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from epsstar.training.clipping import group_norms
from epsstar.training.models import MLP

__all__ = ["StackedBatch", "StackedGradients", "StackedMLP", "stacked_gradients"]

#: Norms below this are treated as this value when forming C/‖∇‖, as in clipping.py.
_TINY = 1e-12

#: Products with fewer output columns than this are computed transposed (see _product).
_FEW_COLUMNS = 8

#: The activations and output gradients of the models a step takes through their layers at
#: once stay within this many bytes: a step of 32 Adult-size models (3×100, padded batch
#: 290) took 36 ms all at once and 27.5 ms eight at a time (one thread, CPU time).
_CACHE_BYTES = 8 * 2**20


@dataclass(frozen=True, slots=True)
class StackedBatch:
    """One step's rows for K models: ``features`` (K, B, d), ``labels`` (K, B), ``mask``
    (K, B; 1 for a sampled row, 0 for padding) and, with microbatches, ``groups`` (K, B)."""

    features: torch.Tensor
    labels: torch.Tensor
    mask: torch.Tensor
    groups: torch.Tensor | None = None

    def part(self, models: slice) -> StackedBatch:
        """The rows of the models ``models`` (views)."""
        groups = None if self.groups is None else self.groups[models]
        return StackedBatch(self.features[models], self.labels[models], self.mask[models], groups)


@dataclass(frozen=True, slots=True)
class StackedGradients:
    """Each model's update direction (stacked, in ``StackedMLP.parameters()`` order) and
    summed loss."""

    gradients: list[torch.Tensor]
    losses: torch.Tensor


class StackedMLP:
    """The weights (K, in, out) and biases (K, out) of K MLPs of one architecture."""

    def __init__(self, weights: Sequence[torch.Tensor], biases: Sequence[torch.Tensor]) -> None:
        self.weights = list(weights)
        self.biases = list(biases)

    @classmethod
    def from_networks(cls, networks: Sequence[MLP]) -> StackedMLP:
        """The stack of ``networks`` (copies; the networks are left alone)."""
        layers = [network.linears for network in networks]
        weights = [
            torch.stack([ls[i].weight.detach().t() for ls in layers]).contiguous()
            for i in range(len(layers[0]))
        ]
        biases = [
            torch.stack([ls[i].bias.detach() for ls in layers]) for i in range(len(layers[0]))
        ]
        return cls(weights, biases)

    @property
    def size(self) -> int:
        return int(self.weights[0].shape[0])

    def parameters(self) -> list[torch.Tensor]:
        """The stacked tensors in the order of ``MLP.parameters()``: W₀, b₀, W₁, b₁, …"""
        return [tensor for pair in zip(self.weights, self.biases, strict=True) for tensor in pair]

    def part(self, models: slice) -> StackedMLP:
        """The models ``models`` of the stack (views)."""
        return StackedMLP([w[models] for w in self.weights], [b[models] for b in self.biases])

    def to(self, device: torch.device) -> StackedMLP:
        return StackedMLP([w.to(device) for w in self.weights], [b.to(device) for b in self.biases])

    def copy_into(self, k: int, network: MLP) -> MLP:
        """``network`` (of the same architecture) holding model k's weights, on the CPU."""
        with torch.no_grad():
            for layer, weight, bias in zip(network.linears, self.weights, self.biases, strict=True):
                layer.weight.copy_(weight[k].t().cpu())
                layer.bias.copy_(bias[k].cpu())
        return network


def _product(x: torch.Tensor, y: torch.Tensor, added: torch.Tensor | None = None) -> torch.Tensor:
    """``added`` + x·y for every model (x (K, m, k), y (K, k, n)), as (yᵀ·xᵀ)ᵀ when y has
    few columns: the CPU's batched product is slow with one output column (1.7 ms for
    (32, 290, 100)·(32, 100, 1), 0.21 ms transposed, one thread), the binary output layer's
    forward product and weight gradient."""
    if y.shape[2] < _FEW_COLUMNS <= x.shape[1]:
        return _product(y.mT, x.mT, None if added is None else added.mT).mT
    return torch.bmm(x, y) if added is None else torch.baddbmm(added, x, y)


def _forward(stack: StackedMLP, x: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
    """The input of every layer of every model (the ReLU applied in place to each hidden
    layer's output) and the logits."""
    inputs: list[torch.Tensor] = []
    last = len(stack.weights) - 1
    activation = x
    for index, (weight, bias) in enumerate(zip(stack.weights, stack.biases, strict=True)):
        inputs.append(activation)
        output = _product(activation, weight, bias.unsqueeze(1))
        activation = output.relu_() if index < last else output
    return inputs, activation


def _logit_gradient(
    logits: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor, binary: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """The gradient of the summed loss with respect to the logits (0 on padding), and each
    model's summed loss."""
    if binary:
        target = labels.to(logits.dtype).unsqueeze(2)
        losses = F.binary_cross_entropy_with_logits(logits, target, reduction="none").squeeze(2)
        gradient = torch.sigmoid(logits) - target
    else:
        k, b, c = logits.shape
        losses = F.cross_entropy(
            logits.reshape(k * b, c), labels.reshape(k * b), reduction="none"
        ).reshape(k, b)
        gradient = torch.softmax(logits, dim=2)
        index = labels.unsqueeze(2)
        gradient.scatter_(2, index, gradient.gather(2, index) - 1.0)
    return gradient * mask.unsqueeze(2), (losses * mask).sum(dim=1)


def _backward(
    stack: StackedMLP, inputs: list[torch.Tensor], top: torch.Tensor
) -> list[torch.Tensor]:
    """The gradient of the summed loss with respect to every layer's output.

    Layer l's ReLU passes the gradient where its output is > 0, which is where the next
    layer's input is > 0; the kernel is the one autograd uses for ReLU
    (``threshold_backward``), written over the product it masks (``masked_fill`` with a
    boolean mask is not vectorised on one CPU thread: 3.0 ms against 0.18 ms for a
    (8, 290, 100) batch)."""
    gradients = [top]
    for index in range(len(inputs) - 1, 0, -1):
        below = _product(gradients[0], stack.weights[index].mT)
        torch.ops.aten.threshold_backward.grad_input(below, inputs[index], 0.0, grad_input=below)
        gradients.insert(0, below)
    return gradients


def _squared_norms(rows: torch.Tensor) -> torch.Tensor:
    """‖row‖² of every row of a stacked (K, B, d) tensor: one reduction over the rows, with
    no (K, B, d) temporary (``rows.pow(2).sum(2)`` makes one, and takes twice as long)."""
    norms: torch.Tensor = torch.linalg.vector_norm(rows, dim=2)
    return norms.square_()


def _example_factors(
    grads: list[torch.Tensor], inputs: list[torch.Tensor], clip: torch.Tensor
) -> torch.Tensor:
    """c_i = min(1, C_k/‖∇_i‖) for every example of every model, (K, B)."""
    squared = torch.zeros(grads[0].shape[:2], dtype=grads[0].dtype, device=grads[0].device)
    for g, a in zip(grads, inputs, strict=True):
        squared.addcmul_(_squared_norms(g), _squared_norms(a).add_(1.0))
    norms = squared.sqrt_().clamp_min_(_TINY)
    return (clip.unsqueeze(1) / norms).clamp(max=1.0)


def _group_factors(
    grads: list[torch.Tensor],
    inputs: list[torch.Tensor],
    batch: StackedBatch,
    clip: torch.Tensor,
    n_groups: int,
) -> torch.Tensor:
    """Each example's weight min(1, C_k/‖mean gradient of its group‖)/|group|, (K, B);
    0 on padding. Model k's group j is group k·m + j of the sampled rows of all models."""
    assert batch.groups is not None
    k = batch.mask.shape[0]
    real = batch.mask > 0
    offsets = (torch.arange(k, device=real.device) * n_groups).unsqueeze(1)
    ids = (batch.groups + offsets)[real]
    norms, counts = group_norms(
        [g[real] for g in grads], [a[real] for a in inputs], ids, k * n_groups, "auto"
    )
    sizes = counts.clamp_min(1).to(grads[0].dtype)
    clips = clip.repeat_interleave(n_groups)
    factors = (clips / (norms / sizes).clamp_min(_TINY)).clamp(max=1.0) / sizes
    weights = torch.zeros(batch.mask.shape, dtype=grads[0].dtype, device=real.device)
    weights[real] = factors[ids]
    return weights


def _models_per_pass(stack: StackedMLP, batch: StackedBatch) -> int:
    """How many models a step takes through their layers at once: as many as keep their
    activations and output gradients within :data:`_CACHE_BYTES`, so that each product
    reads what the one before wrote from the cache rather than from memory."""
    k, rows, width = batch.features.shape
    widths = width + sum(int(weight.shape[2]) for weight in stack.weights)
    per_model = 2 * rows * widths * batch.features.element_size()
    return max(1, min(k, _CACHE_BYTES // max(per_model, 1)))


def _part_gradients(
    stack: StackedMLP,
    batch: StackedBatch,
    binary: bool,
    clip: torch.Tensor | None,
    normaliser: torch.Tensor,
    noise: Sequence[torch.Tensor] | None,
    n_groups: int,
) -> StackedGradients:
    """:func:`stacked_gradients` of one pass's models."""
    inputs, logits = _forward(stack, batch.features)
    top, losses = _logit_gradient(logits, batch.labels, batch.mask, binary)
    grads = _backward(stack, inputs, top)
    if clip is None:
        factors = (1.0 / normaliser).unsqueeze(1).expand(batch.mask.shape)
    elif batch.groups is None:
        factors = _example_factors(grads, inputs, clip) / normaliser.unsqueeze(1)
    else:
        factors = _group_factors(grads, inputs, batch, clip, n_groups)
        factors /= normaliser.unsqueeze(1)
    scaled = [g.mul_(factors.unsqueeze(2)) for g in grads]  # grads not needed after
    gradients: list[torch.Tensor] = []
    for index, (g, a) in enumerate(zip(scaled, inputs, strict=True)):
        if noise is None:
            gradients += [_product(a.mT, g), g.sum(dim=1)]
        else:
            weight_noise, bias_noise = noise[2 * index], noise[2 * index + 1]
            gradients += [_product(a.mT, g, weight_noise), torch.sum(g, dim=1).add_(bias_noise)]
    return StackedGradients(gradients, losses)


def stacked_gradients(
    stack: StackedMLP,
    batch: StackedBatch,
    binary: bool,
    clip: torch.Tensor | None,
    normaliser: torch.Tensor,
    noise: Sequence[torch.Tensor] | None = None,
    n_groups: int = 0,
) -> StackedGradients:
    """Per model, (Σ_units min(1, C_k/‖∇_unit‖)·∇_unit)/ν_k + noise_k (``clip`` (K,) given)
    or the plain gradient of the summed loss over ν_k (``clip`` None), with ν the
    ``normaliser`` (K,); and the summed loss.

    ``noise``, when given, is added to the gradients: one tensor per parameter, shaped and
    laid out as :meth:`StackedMLP.parameters`, already divided by ν_k. A unit is an example,
    or with ``batch.groups`` and ``n_groups`` = m the mean gradient of the examples of one
    of model k's m groups (as in :func:`epsstar.training.clipping.clipped_gradient_sum`).
    The models are taken a few at a time (:func:`_models_per_pass`); each model's numbers
    are the same whatever the others.
    """
    k = stack.size
    step = _models_per_pass(stack, batch)
    parts: list[StackedGradients] = []
    with torch.no_grad():
        for start in range(0, k, step):
            part = slice(start, start + step)
            parts.append(
                _part_gradients(
                    stack.part(part),
                    batch.part(part),
                    binary,
                    None if clip is None else clip[part],
                    normaliser[part],
                    None if noise is None else [tensor[part] for tensor in noise],
                    n_groups,
                )
            )
        if len(parts) == 1:
            return parts[0]
        gradients = [
            torch.cat(pieces) for pieces in zip(*(p.gradients for p in parts), strict=True)
        ]
        return StackedGradients(gradients, torch.cat([p.losses for p in parts]))
