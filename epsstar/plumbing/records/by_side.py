"""A value for each side of a membership question: the training records and the population."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from epsstar.plumbing.records.json_records import JsonRecord

__all__ = ["BySide"]

_Value = TypeVar("_Value")


@dataclass(frozen=True, slots=True)
class BySide(JsonRecord, Generic[_Value]):
    """One value per side, written ``{"train": ..., "population": ...}``."""

    train: _Value
    population: _Value
