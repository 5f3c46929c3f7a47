"""The sensitivity of DP-SGD's gradients to one attribute, tracked while training
(``epsstar train --attribute COLUMN``).

Cherubin et al. 2024, "Closed-Form Bounds for DP-SGD against Record-level Inference" (§5,
Corollary 10 and Algorithm 4), bound an attacker who infers a training record's attribute s from
everything DP-SGD releases by the distance, at every step t, between the clipped gradients of the
record with the attribute set to one value or another:

    R_t = max over records z max over values s0, s1 of ‖ḡ_t(φ(z), s0) − ḡ_t(φ(z), s1)‖,

with ḡ_t the per-example gradient clipped to norm C at the parameters of step t and φ(z)
the rest of the record (label included). :class:`AttributeTracker` computes R_t at every
step, through :class:`epsstar.training.trainer.StepHooks`'s ``sampled`` hook: it reads the
parameters and draws no random numbers, so a run gives the same model with or without it.

Which records: Algorithm 4 takes the maximum over the records sampled at step t
(``records="sampled"``, the default: |A| extra per-example gradients per sampled record).
Theorem 6's Δ, which the corollary specialises, is the distance of the challenge record's
gradients at *every* step, sampled or not (its mixture puts the gradient in with
probability p); ``records="all"`` takes the maximum over every training record at every
step, the conservative reading, at |A|·n per-example gradients per step.

The per-example gradients are never formed: :func:`gradient_gram` gives their inner
products from one backward pass, and the diameter of each record's |A| clipped gradients
follows exactly from those (‖u − v‖² = ‖u‖² + ‖v‖² − 2⟨u, v⟩, in float64; no
triangle-inequality estimate as in §5.4 of the paper: the attribute columns this takes
have at most :data:`MAX_VALUES` values).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import torch
from numpy.typing import NDArray

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.statistics.names import ATTRIBUTE_RECORDS
from epsstar.statistics.names import AttributeRecords as Records
from epsstar.statistics.readings.attribute import AttributeSecurity, attribute_bayes_security
from epsstar.statistics.readings.conversions import CLOSED_FORM_BOUNDS_PAPER
from epsstar.training.clipping import loss_sum
from epsstar.training.data.tables import TabularData
from epsstar.training.models import MLP, Standardiser

__all__ = [
    "DATA_INDEPENDENT_SOURCE",
    "MAX_VALUES",
    "AttributeColumn",
    "AttributeTracker",
    "AttributeTracking",
    "Records",
    "attribute_column",
    "gradient_gram",
    "tracking_record",
]

#: Most values a tracked attribute may take (each record's gradient is taken at every one).
MAX_VALUES: Final = 50

#: Over which records R_t is the maximum (module docstring).

#: Records whose per-example gradients are formed at once (bounds the memory of one step).
_CHUNK = 4096


@dataclass(frozen=True, slots=True)
class AttributeColumn:
    """The tracked feature: its name, its position among the features and its values."""

    column: str
    index: int
    values: tuple[float, ...]


def attribute_column(
    data: TabularData, population: TabularData | None, column: str
) -> AttributeColumn:
    """The feature ``column`` and the values it takes in the training (and population)
    table; refused when the tables have no such column, the model does not read it, or it
    takes fewer than two values or more than :data:`MAX_VALUES`."""
    if column == data.label_column:
        raise InvalidInputError(
            f"--attribute must name a feature the model reads, not the label. Found {column!r}."
        )
    if column not in data.feature_names:
        shown = ", ".join(data.feature_names[:8]) + (", ..." if data.n_features > 8 else "")
        raise InvalidInputError(
            f"--attribute must name a feature the model reads ({shown}). Found {column!r}."
        )
    index = data.feature_names.index(column)
    tables = [data] if population is None else [data, population]
    values = np.unique(np.concatenate([table.features[:, index] for table in tables]))
    if values.size < 2:
        raise InvalidInputError(
            f"--attribute column {column!r} must take at least two values to be inferred. "
            f"Found only {float(values[0])!r}."
        )
    if values.size > MAX_VALUES:
        raise InvalidInputError(
            f"--attribute column {column!r} must take at most {MAX_VALUES} values (each "
            f"record's gradient is taken at every one). Found {values.size}."
        )
    return AttributeColumn(column, index, tuple(float(v) for v in values))


class AttributeTracker:
    """R_t of every step of one run (module docstring): pass it as ``StepHooks(sampled=...)``
    and read :meth:`distances` after the run; ``seconds`` is the time it took. ``standardiser``
    is the run's (:func:`epsstar.training.standardisation.fitted`)."""

    def __init__(
        self,
        column: AttributeColumn,
        data: TabularData,
        standardiser: Standardiser,
        *,
        clip: float,
        records: Records = "sampled",
    ) -> None:
        ATTRIBUTE_RECORDS.check(records)
        self.column = column
        self.records: Records = records
        self.clip = clip
        self._labels = torch.as_tensor(data.labels)
        self._binary = data.n_classes == 2
        self._distances: list[float] = []
        self.seconds = 0.0
        with torch.no_grad():
            self._standardised = standardiser(torch.as_tensor(data.features, dtype=torch.float32))
            j = column.index
            values = torch.as_tensor(column.values, dtype=torch.float32)
            self._values = (values - standardiser.mean[j]) / standardiser.scale[j]

    def __call__(self, step: int, network: MLP, chosen: torch.Tensor) -> None:
        """Record R_t of ``step`` at ``network``'s parameters (``chosen``: the sampled rows)."""
        del step
        started = time.perf_counter()
        rows = chosen if self.records == "sampled" else torch.arange(self._labels.shape[0])
        largest = 0.0
        for begin in range(0, int(rows.shape[0]), _CHUNK):
            part = rows[begin : begin + _CHUNK]
            largest = max(largest, self._largest_distance(network, part))
        self._distances.append(largest)
        self.seconds += time.perf_counter() - started

    def _largest_distance(self, network: MLP, rows: torch.Tensor) -> float:
        """max over ``rows`` of the diameter of each record's clipped gradients over the values."""
        if rows.shape[0] == 0:
            return 0.0
        k = int(self._values.shape[0])
        tried = self._standardised[rows].unsqueeze(0).repeat(k, 1, 1)
        tried[:, :, self.column.index] = self._values.unsqueeze(1)
        gram = gradient_gram(network, tried, self._labels[rows], self._binary)
        norms = gram.diagonal(dim1=1, dim2=2).clamp_min(0.0).sqrt()
        factors = (self.clip / norms.clamp_min(1e-12)).clamp(max=1.0)
        clipped = gram * factors.unsqueeze(2) * factors.unsqueeze(1)
        squared = clipped.diagonal(dim1=1, dim2=2)
        distances = squared.unsqueeze(2) + squared.unsqueeze(1) - 2.0 * clipped
        return float(distances.clamp_min(0.0).amax().sqrt())

    def distances(self) -> NDArray[np.float64]:
        """R_t of every step so far, in order."""
        return np.asarray(self._distances, dtype=np.float64)


def gradient_gram(
    network: MLP, tried: torch.Tensor, labels: torch.Tensor, binary: bool
) -> torch.Tensor:
    """For each record, the inner products of its loss gradients under every tried version.

    ``tried`` has shape (k, m, d): record i with the attribute set to value a is
    ``tried[a, i]``; ``labels`` (m,) are the records' labels. Returns G of shape (m, k, k),
    float64, with G[i, a, b] = ⟨∇ℓ(tried[a, i]), ∇ℓ(tried[b, i])⟩. A Linear layer's weight
    gradient for one row is the outer product g aᵀ of the gradient g of the row's loss at the
    layer's output and the layer's input a, and its bias gradient is g, so ⟨∇, ∇'⟩ =
    Σ_layers (g·g')(a·a' + 1) (the identity :mod:`epsstar.training.clipping` clips with).
    Rows do not interact in the forward pass, so one backward pass of the summed loss gives
    every g.
    """
    k, m = int(tried.shape[0]), int(tried.shape[1])
    inputs: list[torch.Tensor] = []
    outputs: list[torch.Tensor] = []
    layers = network.linears
    activation = tried.reshape(k * m, -1)
    with torch.enable_grad():
        for index, layer in enumerate(layers):
            inputs.append(activation.detach())
            output = torch.nn.functional.linear(
                activation, layer.weight.detach(), layer.bias.detach()
            ).requires_grad_(True)
            outputs.append(output)
            activation = torch.relu(output) if index < len(layers) - 1 else output
        loss = loss_sum(activation, labels.repeat(k), binary)
        grads_out = torch.autograd.grad(loss, outputs)
    gram = torch.zeros((m, k, k), dtype=torch.float64)
    for g, a in zip(grads_out, inputs, strict=True):
        g64 = g.double().reshape(k, m, -1).transpose(0, 1)
        a64 = a.double().reshape(k, m, -1).transpose(0, 1)
        gram += torch.bmm(g64, g64.transpose(1, 2)) * (torch.bmm(a64, a64.transpose(1, 2)) + 1.0)
    return gram


#: ``source`` of the bound that treats every step's distance as 2C (no tracking).
DATA_INDEPENDENT_SOURCE: Final = (
    f"{CLOSED_FORM_BOUNDS_PAPER}, Corollary 7 (substitution): Corollary 10 "
    "with every R_t = 2C, the bound without looking at the gradients (leading term)"
)


@dataclass(frozen=True, slots=True)
class AttributeTracking(JsonRecord):
    """What ``training.json`` records under ``attribute_inference``: the tracked column and
    its values, the inputs of Corollary 10 (the per-step distances R_t, σ, C, the sampling
    rate p and the steps T), the bound they give and, beside it, the data-independent
    bound (every R_t = 2C, Corollary 7), and the seconds the tracking took."""

    column: AttributeColumn = field(metadata=json_rule(skip=True))
    records: Records
    sampling_rate: float
    noise_multiplier: float
    clip: float
    distances: tuple[float, ...] = field(metadata=json_rule(name="r_per_step"))
    bound: AttributeSecurity
    data_independent: AttributeSecurity = field(metadata=json_rule(name="data_independent_bound"))
    seconds: float

    @json_property(name="column", after="column")
    def column_name(self) -> str:
        return self.column.column

    @json_property(after="column")
    def values(self) -> tuple[float, ...]:
        return tuple(float(value) for value in self.column.values)

    @json_property(after="clip")
    def steps(self) -> int:
        return len(self.distances)

    @json_property(after="distances")
    def r_max(self) -> float:
        return max(self.distances, default=0.0)


def tracking_record(
    tracker: AttributeTracker, sampling_rate: float, noise_multiplier: float
) -> AttributeTracking:
    """The record of a finished run's tracking and the bound of Corollary 10
    (:func:`epsstar.statistics.readings.attribute.attribute_bayes_security`)."""
    distances = tracker.distances()
    bound = attribute_bayes_security(sampling_rate, distances, noise_multiplier, tracker.clip)
    worst = np.full(distances.size, 2.0 * tracker.clip)
    independent = attribute_bayes_security(sampling_rate, worst, noise_multiplier, tracker.clip)
    return AttributeTracking(
        column=tracker.column,
        records=tracker.records,
        sampling_rate=sampling_rate,
        noise_multiplier=noise_multiplier,
        clip=tracker.clip,
        distances=tuple(float(d) for d in distances),
        bound=bound,
        data_independent=dataclasses.replace(independent, source=DATA_INDEPENDENT_SOURCE),
        seconds=tracker.seconds,
    )
