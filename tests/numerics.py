"""How far apart two float32 evaluations of one model may lie, derived from the arithmetic.

The tests compare a float32 model's outputs (and what is computed from them) across kernels,
batch shapes and file formats. PyTorch, oneDNN, MKL and onnxruntime choose their kernels by
the CPU's instruction set and the thread count, and each kernel sums in its own order and
blocking, so the last bits differ from machine to machine. Every tolerance on such outputs
is derived here, once:

1. **One operation.** A float32 operation rounds with a relative error of at most the unit
   roundoff ``u = 2^-24``.
2. **A sum of k terms** in any order or blocking lies within ``γ_k·Σ|terms|`` of the exact
   sum, ``γ_k = k·u / (1 − k·u)`` ("Accuracy and Stability of Numerical Algorithms",
   N. J. Higham, §3.1). Two kernels' results therefore lie within ``2γ_k·Σ|terms|``.
3. **A dense network** (affine layers, activations with ``|f(z)| ≤ |z|`` and Lipschitz
   constant 1: identity, ReLU, tanh) adds a layer's rounding to the error the layer
   receives, which its weights carry forward. To first order in ``u`` every error is then
   bounded by the same network run on absolute values, ``A(x)`` (``|W|``, ``|b|``, ``|x|``,
   no activation), times ``γ_K`` with ``K = Σ_layers (fan-in + 1)`` (each layer's products and
   its bias): two float32 evaluations lie within ``2γ_K·A(x)`` of each other. Against a
   float64 evaluation one float32 evaluation is off by its own ``γ_K·A(x)`` plus the
   rounding of its inputs and weights to float32, ``γ_(L+1)·A(x)`` for ``L`` layers.
4. **A decoder-only transformer** (GPT-2) has layer norms and attention, which the
   absolute-value network does not bound: its estimate takes every stage to pass the
   relative error it receives on unamplified (condition 1), so that a token's logits carry
   ``γ_K`` times their own terms ``Σ_i |h_i·W_vi|`` (``h`` the last hidden state, ``W`` the
   output layer), with ``K`` the sums on the path (:func:`transformer_path`). A
   log-probability ``z_v − logsumexp(z)`` moves by at most twice the largest logit's error,
   plus the rounding of the log-softmax's own sum of exponentials; the Min-K%++ moments
   ``μ = Σ_v p_v·log p_v`` and ``σ`` by the sums of their derivatives' magnitudes
   (:func:`moments_tolerance`).
5. **Losses.** The binary logit loss ``(1 − 2y)·z`` moves as ``z`` does; the multiclass one,
   ``logsumexp_{j≠y} z_j − z_y``, has a gradient of ℓ1 norm at most 2, so it moves by at
   most twice the largest logit's error. From a float32 probability ``p`` the log-odds
   ``log p − log(1 − p)`` also carry the rounding of ``p`` and ``1 − p`` (the sigmoid's
   exp, add and divide: ``3u`` absolute each, per evaluation), divided by ``p`` and
   ``1 − p``.
6. **A statistic of the losses** (Epsilon*, its fitted tails, rates) moves by at most
   ``Σ_i |∂S/∂ℓ_i|·τ_i`` for losses within ``τ_i``. Epsilon* grows as the training losses
   fall below the population's, so the derivative has one sign on each side: the bound is
   attained by shifting each side by its tolerance in one direction (training down,
   population up) and in the other, and :func:`propagated` measures it so. A statistic
   that sits on a knife's edge (a supremum whose maximising threshold switches records
   under a perturbation) is compared by its value within that tolerance, never by which
   record attains it.

Outputs of models computed in float64 from fixed inputs keep their exact values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]

#: The unit roundoff of float32: the largest relative error of one rounded operation.
UNIT_ROUNDOFF = 2.0**-24
#: Roundings of a sigmoid or softmax output (exp, add, divide), each of u relative.
SIGMOID_ROUNDINGS = 3


def gamma(k: int) -> float:
    """``γ_k = k·u / (1 − k·u)``: the relative error bound of a float32 sum of ``k`` terms."""
    if k * UNIT_ROUNDOFF >= 1:
        raise ValueError(f"γ_k is unbounded for k = {k}")
    return k * UNIT_ROUNDOFF / (1 - k * UNIT_ROUNDOFF)


def sum_tolerance(k: int, magnitude: FloatArray | float) -> FloatArray | float:
    """How far two float32 sums of the same ``k`` terms, ``Σ|terms| = magnitude``, may lie
    apart (point 2)."""
    return 2 * gamma(k) * magnitude


Layer = tuple[FloatArray, FloatArray]  # (weights: fan-in × fan-out, bias: fan-out)


def estimator_layers(estimator: Any) -> list[Layer]:
    """The dense layers of a scikit-learn ``LogisticRegression`` or ``MLPClassifier``."""
    if hasattr(estimator, "coefs_"):
        return list(zip(estimator.coefs_, estimator.intercepts_, strict=True))
    return [(estimator.coef_.T, estimator.intercept_)]


def module_layers(module: Any) -> list[Layer]:
    """The dense layers of a torch ``Sequential`` of ``Linear`` layers and ReLUs, in float64."""
    return [
        (
            layer.weight.detach().double().numpy().T,
            layer.bias.detach().double().numpy(),
        )
        for layer in module
        if hasattr(layer, "weight")
    ]


def absolute_forward(layers: Sequence[Layer], inputs: FloatArray) -> FloatArray:
    """``A(x)``: the network run on absolute values, in float64 (point 3)."""
    values = np.abs(np.asarray(inputs, dtype=np.float64))
    for weights, bias in layers:
        values = values @ np.abs(weights) + np.abs(bias)
    return values


def depth(layers: Sequence[Layer]) -> int:
    """``K``: the roundings on the longest path through ``layers`` (point 3)."""
    return sum(weights.shape[0] + 1 for weights, _ in layers)


def network_tolerance(
    layers: Sequence[Layer],
    inputs: FloatArray,
    *,
    against_float64: bool = False,
    input_roundings: int = 0,
) -> FloatArray:
    """Per record and output, how far a float32 evaluation of the dense network ``layers``
    may lie from another float32 evaluation (any kernel), or with ``against_float64`` from
    the float64 evaluation of the same weights (point 3). ``input_roundings`` are float32
    operations applied to each input first (a standardiser's subtraction and division: 2),
    the inputs then given as they come out of them."""
    magnitude = absolute_forward(layers, inputs)
    path = depth(layers) + input_roundings
    if against_float64:
        return (gamma(path) + gamma(len(layers) + 1)) * magnitude
    return 2 * gamma(path) * magnitude


def module_tolerance(module: Any, inputs: FloatArray, *, pooled: int = 0) -> FloatArray:
    """Per record and output, how far two float32 evaluations of a torch ``module`` of affine
    layers (``Linear``, ``Conv``), ReLUs, pools and reshapes may lie apart (point 3): its
    ``A(x)`` is the module itself run with absolute parameters on ``|x|``, its ``K`` each
    weight's fan-in and bias, plus the sums and divisions of average pools (``pooled``)."""
    import torch

    parameters = list(module.parameters())
    path = pooled + sum(int(np.prod(p.shape[1:])) + 1 for p in parameters if p.ndim >= 2)
    kept = [p.detach().clone() for p in parameters]
    with torch.no_grad():
        try:
            for parameter in parameters:
                parameter.abs_()
            absolute = torch.as_tensor(np.abs(np.asarray(inputs)), dtype=torch.float32)
            magnitude = module(absolute).double().numpy()
        finally:
            for parameter, value in zip(parameters, kept, strict=True):
                parameter.copy_(value)
    return 2 * gamma(path) * magnitude


def logit_loss_tolerance(logit_tolerance: FloatArray) -> FloatArray:
    """Per record, how far the logit loss may move when each logit moves within
    ``logit_tolerance`` (``(n,)`` or ``(n, 1)`` binary log-odds, ``(n, K)`` class logits;
    point 5)."""
    tolerance = np.asarray(logit_tolerance, dtype=np.float64)
    if tolerance.ndim == 2 and tolerance.shape[1] > 1:
        return 2 * tolerance.max(axis=1)
    return tolerance.reshape(len(tolerance))


def probability_loss_tolerance(
    logit_tolerance: FloatArray, probabilities: FloatArray, *, evaluations: int = 2
) -> FloatArray:
    """Per record, how far the binary logit loss read from a float32 probability ``p`` may
    move: the log-odds' own error and the rounding of ``p`` in ``evaluations`` float32
    evaluations (two when two are compared, one against float64; point 5)."""
    p = np.asarray(probabilities, dtype=np.float64).reshape(-1)
    rounding = evaluations * SIGMOID_ROUNDINGS * UNIT_ROUNDOFF
    return logit_loss_tolerance(logit_tolerance) + rounding * (1 / p + 1 / (1 - p))


def loss_tolerance(
    logit_tolerance: FloatArray, predictions: FloatArray, output_kind: str, evaluations: int = 2
) -> FloatArray:
    """Per record, how far the logit loss of a model's ``predictions`` (``output_kind``
    ``"logits"`` or ``"probabilities"``) may move when its logits move within
    ``logit_tolerance`` (point 5)."""
    if output_kind == "probabilities":
        return probability_loss_tolerance(logit_tolerance, predictions, evaluations=evaluations)
    return logit_loss_tolerance(logit_tolerance)


def probability_tolerance(
    logit_tolerance: FloatArray, probabilities: FloatArray, *, rounded: int
) -> FloatArray:
    """Per record and class, how far ``sigmoid(z)`` or ``softmax(z)`` may move when the logits
    move within ``logit_tolerance``: ``p(1 − p)·|δz|`` for one column, ``2·p_j·max|δz|`` for
    classes, plus the rounding of ``rounded`` float32 sigmoid or softmax evaluations."""
    p = np.asarray(probabilities, dtype=np.float64)
    tolerance = np.asarray(logit_tolerance, dtype=np.float64).reshape(len(p), -1)
    if p.ndim == 1 or p.shape[1] == 1:
        moved = p * (1 - p) * tolerance.reshape(p.shape)
    else:
        moved = 2 * p * tolerance.max(axis=1, keepdims=True)
    return moved + rounded * SIGMOID_ROUNDINGS * UNIT_ROUNDOFF


Statistic = Callable[[FloatArray, FloatArray], float]


def propagated(
    statistic: Statistic,
    train: FloatArray,
    population: FloatArray,
    train_tolerance: FloatArray | float,
    population_tolerance: FloatArray | float,
) -> float:
    """How far ``statistic(train, population)`` may move when each loss moves within its
    tolerance: the larger change of the two one-signed shifts (point 6)."""
    here = statistic(train, population)
    apart = statistic(train - train_tolerance, population + population_tolerance)
    closer = statistic(train + train_tolerance, population - population_tolerance)
    return max(abs(apart - here), abs(closer - here))


def transformer_path(width: int, blocks: int, head_width: int, positions: int) -> int:
    """``K`` of a GPT-2-style decoder (point 4): per block the two layer norms' sums (width
    each), the query/key/value, attention-output and two MLP products with their biases, the
    attention scores ``q·k`` (head_width), the attention softmax's and weighted sum's sums
    (positions each) and two residual adds; then the last layer norm and the output layer."""
    products = 3 * (width + 1) + (4 * width + 1)
    block = 2 * width + products + head_width + 2 * positions + 2
    return blocks * block + 2 * width


def logits_magnitude(hidden: FloatArray, output_layer: FloatArray) -> FloatArray:
    """Per position, the largest ``Σ_i |h_i·W_vi|`` over the vocabulary: the terms of a
    logit, ``hidden`` ``(positions, width)``, ``output_layer`` ``(vocabulary, width)``."""
    hidden_abs = np.abs(np.asarray(hidden, dtype=np.float64))
    terms: FloatArray = hidden_abs @ np.abs(np.asarray(output_layer, dtype=np.float64)).T
    return terms.max(axis=-1)


def log_softmax_tolerance(
    logit_tolerance: FloatArray | float, vocabulary: int, float32_softmaxes: int
) -> FloatArray | float:
    """How far a log-probability ``z_v − logsumexp(z)`` may move: twice its logits'
    ``logit_tolerance``, plus each float32 log-softmax's own rounding (a sum of
    ``vocabulary`` exponentials, their exp and the log: ``γ_(vocabulary + 2)``; point 4)."""
    return 2 * logit_tolerance + float32_softmaxes * gamma(vocabulary + 2)


def moments_tolerance(
    log_probs: FloatArray, tolerance: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """``μ``, ``σ`` of each position's log-distribution ``(positions, vocabulary)`` and how
    far they may move when every log-probability moves within ``tolerance`` (per position):
    ``|∂μ/∂l_v| = p_v·|1 + l_v|``, ``|∂σ/∂l_v| = |∂σ²/∂l_v| / 2σ`` (point 4)."""
    logs = np.asarray(log_probs, dtype=np.float64)
    p = np.exp(logs)
    mu = (p * logs).sum(axis=-1)
    sigma = np.sqrt(np.maximum((p * logs * logs).sum(axis=-1) - mu * mu, 0.0))
    d_mu = p * (1 + logs)
    d_variance = p * logs * logs + 2 * p * logs - 2 * mu[..., None] * d_mu
    mu_tolerance = tolerance * np.abs(d_mu).sum(axis=-1)
    sigma_tolerance = tolerance * np.abs(d_variance).sum(axis=-1) / (2 * sigma)
    return mu, sigma, mu_tolerance, sigma_tolerance


def standardised_tolerance(
    log_prob: FloatArray,
    mu: FloatArray,
    sigma: FloatArray,
    tolerances: tuple[FloatArray, FloatArray, FloatArray],
) -> FloatArray:
    """How far ``(l − μ)/σ`` (Min-K%++'s score of a token) may move when ``l``, ``μ`` and
    ``σ`` move within ``tolerances`` (first order)."""
    log_tolerance, mu_tolerance, sigma_tolerance = tolerances
    z = (log_prob - mu) / sigma
    return (log_tolerance + mu_tolerance) / sigma + np.abs(z) * sigma_tolerance / sigma
