"""The record of one fine-tuning run of a language model, written as ``training.json``.

Declared by ``epsstar/schemas/text-training.schema.json`` (its privacy and its history
those of the tables' record, :mod:`epsstar.training.results`); see ``docs/training.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Final

from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.plumbing.records.json_types import JsonValue
from epsstar.training.results import EpochStats, PrivacySummary

__all__ = [
    "TEXT_SCHEMA_VERSION",
    "LoraSummary",
    "TextDataSummary",
    "TextHyperparameters",
    "TextModelSummary",
    "TextTrainingResult",
    "TextVersions",
]

TEXT_SCHEMA_VERSION: Final = 1


@dataclass(frozen=True, slots=True)
class TextDataSummary(JsonRecord):
    """The training records: their file and column, count, tokens and truncation."""

    train: str
    text_column: str
    n_train: int
    tokens: int
    max_length: int
    truncated: int


@dataclass(frozen=True, slots=True)
class LoraSummary(JsonRecord):
    """The adapter trained instead of the model's weights."""

    rank: int
    alpha: float
    modules: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TextModelSummary(JsonRecord):
    """The model fine-tuned: its starting folder, architecture, size and what was trained."""

    init: str
    architecture: str
    n_parameters: int
    trained_parameters: int
    lora: LoraSummary | None


@dataclass(frozen=True, slots=True)
class TextHyperparameters(JsonRecord):
    """Optimisation settings; ``batch_size`` is the expected Poisson batch q·n."""

    epochs: int
    batch_size: int
    sampling: str
    sampling_rate: float
    steps_per_epoch: int
    steps: int
    optimizer: str
    lr: float
    clip: float | None
    update_normaliser: float
    physical_batch: int
    seed: int
    dtype: str


@dataclass(frozen=True, slots=True)
class TextVersions(JsonRecord):
    """The versions of epsstar, torch and transformers that fine-tuned the model."""

    epsstar: str
    torch: str
    transformers: str


_SKIP = json_rule(skip=True)


@dataclass(frozen=True, slots=True)
class TextTrainingResult(JsonRecord):
    """Everything ``training.json`` holds about one fine-tuned language model."""

    json_constants: ClassVar[Mapping[str, JsonValue]] = {
        "schema_version": TEXT_SCHEMA_VERSION,
        "task": "causal-lm",
    }

    private: bool = field(metadata=_SKIP)
    data: TextDataSummary
    model: TextModelSummary
    hyperparameters: TextHyperparameters
    privacy: PrivacySummary | None
    history: tuple[EpochStats, ...]
    wall_time_seconds: float
    device: str
    versions: TextVersions
    files: tuple[str, ...]

    @json_property(after="private")
    def kind(self) -> str:
        """``dp-sgd`` or ``non-private``."""
        return "dp-sgd" if self.private else "non-private"

    @json_property(name="private", after="private")
    def private_written(self) -> bool:
        return self.private
