"""The settings of one fine-tuning run of a language model, checked when built."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final

from epsstar.plumbing.records.constraints import (
    ColumnName,
    InRange,
    Maybe,
    OneOf,
    WholeNumber,
    check_fields,
    constraint,
)
from epsstar.statistics._validation import DELTA
from epsstar.statistics.names import ACCOUNTANTS
from epsstar.training.accounting import DEFAULT_MAX_NOISE_MULTIPLIER
from epsstar.training.trainer import TrainingConfig, check_noise_source

__all__ = ["DEFAULT_LORA_ALPHA", "DEFAULT_TEXT_LR", "TextTrainingConfig"]

#: AdamW's learning rate unless ``--lr`` is given (the tables' SGD takes 0.01).
DEFAULT_TEXT_LR: Final = 5e-4
#: LoRA's α unless ``--lora-alpha`` is given (PEFT's default): the update is (α / r)·B A.
DEFAULT_LORA_ALPHA: Final = 8.0


@dataclass(frozen=True, slots=True)
class TextTrainingConfig:
    """Settings of one fine-tuning run (``epsstar train --text-column``).

    Private when ``target_epsilon`` or ``noise_multiplier`` is given (not both), as for
    tables; ``batch_size`` is the expected Poisson batch. ``max_length`` tokens at most per
    record (``None``: the model's context). ``lora_rank`` trains a LoRA adapter of that rank
    instead of every weight. ``physical_batch`` records go through the model at once
    (``None``: chosen from the trained parameters' size, :mod:`.per_example`); it changes
    the memory, not the result beyond summation order.
    """

    text_column: str = field(metadata=constraint(ColumnName()))
    epochs: int = field(metadata=constraint(WholeNumber()))
    batch_size: int = field(default=64, metadata=constraint(WholeNumber()))
    lr: float = field(default=DEFAULT_TEXT_LR, metadata=constraint(InRange(0.0, math.inf)))
    clip: float = field(default=1.0, metadata=constraint(InRange(0.0, math.inf)))
    target_epsilon: float | None = field(
        default=None, metadata=constraint(Maybe(InRange(0.0, math.inf)))
    )
    noise_multiplier: float | None = field(
        default=None, metadata=constraint(Maybe(InRange(0.0, math.inf)))
    )
    delta: float | None = field(default=None, metadata=constraint(Maybe(DELTA)))
    accountant: str = field(default=ACCOUNTANTS.names[0], metadata=constraint(OneOf(ACCOUNTANTS)))
    max_noise_multiplier: float = field(
        default=DEFAULT_MAX_NOISE_MULTIPLIER, metadata=constraint(InRange(0.0, math.inf))
    )
    max_length: int | None = field(default=None, metadata=constraint(Maybe(WholeNumber())))
    lora_rank: int | None = field(default=None, metadata=constraint(Maybe(WholeNumber())))
    lora_alpha: float = field(
        default=DEFAULT_LORA_ALPHA, metadata=constraint(InRange(0.0, math.inf))
    )
    physical_batch: int | None = field(default=None, metadata=constraint(Maybe(WholeNumber())))
    seed: int = field(default=0, metadata=constraint(WholeNumber(minimum=0)))
    #: Where the run computes; the batches and the noise are drawn on the CPU.
    device: str = "cpu"

    def __post_init__(self) -> None:
        check_fields(self)
        check_noise_source(self.target_epsilon, self.noise_multiplier)

    @property
    def private(self) -> bool:
        return self.target_epsilon is not None or self.noise_multiplier is not None

    def schedule_config(self) -> TrainingConfig:
        """The tables' settings with this run's sampling and privacy, which
        :func:`~epsstar.training.trainer.plan_privacy` and
        :func:`~epsstar.training.trainer.schedule` plan from (one accountant for both)."""
        return TrainingConfig(
            epochs=self.epochs,
            batch_size=self.batch_size,
            lr=self.lr,
            clip=self.clip,
            target_epsilon=self.target_epsilon,
            noise_multiplier=self.noise_multiplier,
            delta=self.delta,
            accountant=self.accountant,
            max_noise_multiplier=self.max_noise_multiplier,
            seed=self.seed,
            device=self.device,
        )
