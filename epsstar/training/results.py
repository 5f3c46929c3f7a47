"""The record of one training run, written as ``training.json``.

Frozen dataclasses built once at the end of a run, each writing its JSON from its fields
(:mod:`epsstar.plumbing.records.json_records`; infinities become ``null``);
``TrainingResult.to_dict()`` gives the document. The layout is a public contract, versioned
by ``schema_version``; see ``docs/training.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from epsstar.plumbing.records.by_side import BySide
from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.plumbing.records.json_types import JsonObject, JsonValue
from epsstar.statistics.names import STANDARDISATIONS, StandardiseOn

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.training.attribute import AttributeTracking

__all__ = [
    "SCHEMA_VERSION",
    "DataSummary",
    "EpochStats",
    "Hyperparameters",
    "ModelSummary",
    "PrivacySummary",
    "Standardisation",
    "TrainingResult",
    "TrainingUtility",
    "Versions",
]

SCHEMA_VERSION = 5


@dataclass(frozen=True, slots=True)
class DataSummary(JsonRecord):
    """Where the data came from and how labels were encoded (``classes[k]`` is class k)."""

    train: str
    population: str | None
    label_column: str
    feature_names: tuple[str, ...]
    classes: tuple[str, ...]
    n_train: int
    n_population: int | None


@dataclass(frozen=True, slots=True)
class Standardisation(JsonRecord):
    """The table the exported model's mean and standard deviation were fitted on (one of
    :data:`~epsstar.statistics.names.STANDARDISATIONS`), and whether the run's DP guarantee
    covers them (None: the run has no guarantee); :mod:`epsstar.training.standardisation`."""

    fitted_on: StandardiseOn
    covered_by_guarantee: bool | None

    @json_property()
    def description(self) -> str:
        return STANDARDISATIONS[self.fitted_on].description


@dataclass(frozen=True, slots=True)
class ModelSummary(JsonRecord):
    """Architecture, the exported model's standardisation and its output convention."""

    architecture: str
    n_features: int
    hidden: tuple[int, ...]
    n_outputs: int
    n_parameters: int
    output: str
    standardisation: Standardisation


@dataclass(frozen=True, slots=True)
class Hyperparameters(JsonRecord):
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
class PrivacySummary(JsonRecord):
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
class TrainingUtility(JsonRecord):
    """The trainer's measure of its model on one data set: accuracy, AUROC, mean cross-entropy.

    AUROC for binary tasks only. Written under ``utility`` in ``training.json``; an audit
    reports its own :class:`epsstar.statistics.utility.Utility` (no loss, AUROC of every task).
    """

    n_records: int
    accuracy: float
    auroc: float | None
    loss: float


@dataclass(frozen=True, slots=True)
class EpochStats(JsonRecord):
    """Mean training loss over the epoch's sampled examples, and ε spent after it."""

    epoch: int
    epochs: int
    loss: float
    epsilon: float | None
    seconds: float


@dataclass(frozen=True, slots=True)
class Versions(JsonRecord):
    """The versions of epsstar and torch that trained the model."""

    epsstar: str
    torch: str


_SKIP = json_rule(skip=True)


@dataclass(frozen=True, slots=True)
class TrainingResult(JsonRecord):
    """Everything ``training.json`` holds about one trained model.

    ``fingerprint`` (:mod:`epsstar.training.runs.fingerprint`) is set when the model is written
    to a directory; None for a model trained in memory. The fields are declared in the
    document's order.
    """

    json_constants: ClassVar[Mapping[str, JsonValue]] = {"schema_version": SCHEMA_VERSION}

    #: Written after ``kind``, which names the same choice in words.
    private: bool = field(metadata=_SKIP)
    data: DataSummary
    model: ModelSummary
    hyperparameters: Hyperparameters
    privacy: PrivacySummary | None
    utility_train: TrainingUtility = field(metadata=_SKIP)
    utility_population: TrainingUtility | None = field(metadata=_SKIP)
    history: tuple[EpochStats, ...]
    wall_time_seconds: float
    epsstar_version: str = field(metadata=_SKIP)
    torch_version: str = field(metadata=_SKIP)
    #: The torch device the model was trained on (``--device``): ``cpu``, ``cuda:N``, ``mps``.
    device: str = field(default="cpu", kw_only=True)
    files: dict[str, str]
    fingerprint: JsonObject | None = field(default=None)
    #: The tracked attribute and its bound (``epsstar train --attribute``; None: not tracked).
    attribute_inference: AttributeTracking | None = field(default=None)

    @json_property(after="private")
    def kind(self) -> str:
        """``dp-sgd`` or ``non-private``."""
        return "dp-sgd" if self.private else "non-private"

    @json_property(name="private", after="private")
    def private_written(self) -> bool:
        return self.private

    @json_property(after="utility_population")
    def utility(self) -> BySide[TrainingUtility | None]:
        return BySide(self.utility_train, self.utility_population)

    @json_property(after="torch_version")
    def versions(self) -> Versions:
        return Versions(self.epsstar_version, self.torch_version)
