"""The record of one training run, written as ``training.json``.

Frozen dataclasses built once at the end of a run; :meth:`TrainingResult.to_dict`
gives the JSON document (infinities become ``null``). The layout is a public
contract, versioned by ``schema_version``; see ``docs/training.md``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from epsstar.plumbing.json_types import JsonObject, JsonValue

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.training.attribute import AttributeTracking

__all__ = [
    "SCHEMA_VERSION",
    "DataSummary",
    "EpochStats",
    "Hyperparameters",
    "ModelSummary",
    "PrivacySummary",
    "TrainingResult",
    "TrainingUtility",
]

SCHEMA_VERSION = 4


@dataclass(frozen=True, slots=True)
class DataSummary:
    """Where the data came from and how labels were encoded (``classes[k]`` is class k)."""

    train: str
    population: str | None
    label_column: str
    feature_names: tuple[str, ...]
    classes: tuple[str, ...]
    n_train: int
    n_population: int | None


@dataclass(frozen=True, slots=True)
class ModelSummary:
    """Architecture and the exported model's output convention."""

    architecture: str
    n_features: int
    hidden: tuple[int, ...]
    n_outputs: int
    n_parameters: int
    output: str
    standardisation: str = "mean/std of the training features, inside the exported model"


@dataclass(frozen=True, slots=True)
class Hyperparameters:
    """Optimisation settings; ``batch_size`` is the expected batch size q·n."""

    epochs: int
    batch_size: int
    sampling: str
    sampling_rate: float
    steps_per_epoch: int
    steps: int
    optimizer: str
    lr: float
    momentum: float
    clip: float | None
    microbatches: int | None
    update_normaliser: float
    seed: int
    dtype: str


@dataclass(frozen=True, slots=True)
class PrivacySummary:
    """DP-SGD privacy parameters and the ε the accountant certifies for them.

    ``noise_multiplier`` σ: the noise added to the sum of clipped gradients has
    standard deviation σ·C. ``sensitivity`` is the largest change of that sum
    when one record is added or removed (C per example, 2C per microbatch of
    more than one example), and the accountant is run with
    ``accounting_noise_multiplier`` = σ·C / sensitivity. ``bayes_security``
    holds, per neighbouring relation, the Bayes security from the privacy loss
    distribution (a lower bound) beside Corollary 7's closed form (an
    approximation); see ``docs/training.md``.
    """

    target_epsilon: float | None
    epsilon: float
    delta: float
    delta_rule: str
    noise_multiplier: float
    noise_std: float
    clip: float
    clipping_unit: str
    sensitivity: float
    accounting_noise_multiplier: float
    sampling_rate: float
    steps: int
    neighbouring: str
    accountant: JsonObject
    posterior_belief_bound: float
    advantage_bound_gaussian: float
    bayes_security: dict[str, JsonObject]


@dataclass(frozen=True, slots=True)
class TrainingUtility:
    """The trainer's measure of its model on one data set: accuracy, AUROC, mean cross-entropy.

    AUROC for binary tasks only. Written under ``utility`` in ``training.json``; an audit
    reports its own :class:`epsstar.statistics.utility.Utility` (no loss, AUROC of every task).
    """

    n_records: int
    accuracy: float
    auroc: float | None
    loss: float


@dataclass(frozen=True, slots=True)
class EpochStats:
    """Mean training loss over the epoch's sampled examples, and ε spent after it."""

    epoch: int
    epochs: int
    loss: float
    epsilon: float | None
    seconds: float


@dataclass(frozen=True, slots=True)
class TrainingResult:
    """Everything ``training.json`` holds about one trained model.

    ``fingerprint`` (:mod:`epsstar.training.runs.fingerprint`) is set when the model is written
    to a directory; None for a model trained in memory.
    """

    private: bool
    data: DataSummary
    model: ModelSummary
    hyperparameters: Hyperparameters
    privacy: PrivacySummary | None
    utility_train: TrainingUtility
    utility_population: TrainingUtility | None
    history: tuple[EpochStats, ...]
    wall_time_seconds: float
    epsstar_version: str
    torch_version: str
    files: dict[str, str]
    fingerprint: JsonObject | None = field(default=None)
    #: The tracked attribute and its bound (``epsstar train --attribute``; None: not tracked).
    attribute_inference: AttributeTracking | None = field(default=None)
    #: The torch device the model was trained on (``--device``): ``cpu``, ``cuda:N``, ``mps``.
    device: str = "cpu"

    def to_dict(self) -> JsonObject:
        """The JSON document (a plain dict; non-finite floats become ``None``)."""
        document = {
            "schema_version": SCHEMA_VERSION,
            "kind": "dp-sgd" if self.private else "non-private",
            "private": self.private,
            "data": dataclasses.asdict(self.data),
            "model": dataclasses.asdict(self.model),
            "hyperparameters": dataclasses.asdict(self.hyperparameters),
            "privacy": None if self.privacy is None else dataclasses.asdict(self.privacy),
            "utility": {
                "train": dataclasses.asdict(self.utility_train),
                "population": None
                if self.utility_population is None
                else dataclasses.asdict(self.utility_population),
            },
            "history": [dataclasses.asdict(entry) for entry in self.history],
            "wall_time_seconds": self.wall_time_seconds,
            "versions": {"epsstar": self.epsstar_version, "torch": self.torch_version},
            "device": self.device,
            "files": dict(self.files),
            "fingerprint": None if self.fingerprint is None else dict(self.fingerprint),
        }
        document["attribute_inference"] = (
            None if self.attribute_inference is None else self.attribute_inference.to_dict()
        )
        cleaned = _json_safe(document)
        assert isinstance(cleaned, dict)
        return cleaned


def _json_safe(value: object) -> JsonValue:
    """``value`` as JSON holds it: tuples as lists, non-finite floats as ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(key): _json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(item) for item in value]
    if value is None or isinstance(value, str | int | bool):
        return value
    raise TypeError(f"not a JSON value: {type(value).__name__}")  # a programming error
