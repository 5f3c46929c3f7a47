"""How an audit reads its two tables: one record for the target and every reference model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["TableReading"]


@dataclass(frozen=True, slots=True)
class TableReading:
    """How the audit reads its two tables (the same for the target and every reference)."""

    train: Path
    population: Path
    label_column: str
    features: Sequence[str] | None = None
    batch_size: int = 16_384
    input_shape: tuple[int, ...] | None = None
