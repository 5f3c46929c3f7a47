"""What the extraction test of a text audit asks (``--extraction`` and its options): how each
record is split into a prefix and a suffix, how many records of each side are tested, how
continuations are sampled, and the gate's limit on the training records' excess of greedy
exact extraction over the population's (:mod:`epsstar.audit.text_extraction`).

Each field is named as its command-line option, and checked when the record is built.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Final

from epsstar.audit.model.text_model import Sampling
from epsstar.plumbing.records.constraints import (
    InRange,
    Maybe,
    WholeNumber,
    check_fields,
    constraint,
)
from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.statistics.attacks.extraction import DISCOVERABLE, NEAR_VERBATIM

__all__ = ["DEFAULT_EXTRACTION", "ExtractionSettings"]


@dataclass(frozen=True, slots=True)
class ExtractionSettings(JsonRecord):
    """A record's first ``extraction_prefix`` tokens (its tokenizer's beginning-of-sequence
    token among them) are the prefix, the ``extraction_suffix`` after them the suffix (a
    shorter record is skipped and counted); at most ``extraction_records`` records of each
    side are tested (a seeded sample); ``extraction_samples`` continuations of each prefix
    are drawn at ``extraction_temperature`` among the ``extraction_top_k`` likeliest
    tokens; ``max_extraction_rate`` (``None``: no gate) bounds the training records' greedy
    exact extraction rate minus the population's."""

    extraction_prefix: int = field(
        default=32, metadata={**constraint(WholeNumber()), **json_rule(name="prefix_tokens")}
    )
    extraction_suffix: int = field(
        default=32, metadata={**constraint(WholeNumber()), **json_rule(name="suffix_tokens")}
    )
    extraction_records: int = field(
        default=500, metadata={**constraint(WholeNumber()), **json_rule(name="records")}
    )
    extraction_samples: int = field(
        default=10, metadata={**constraint(WholeNumber()), **json_rule(name="samples")}
    )
    extraction_temperature: float = field(
        default=1.0,
        metadata={**constraint(InRange(0.0, math.inf)), **json_rule(name="temperature")},
    )
    extraction_top_k: int = field(
        default=40, metadata={**constraint(WholeNumber()), **json_rule(name="top_k")}
    )
    max_extraction_rate: float | None = field(
        default=None,
        metadata={**constraint(Maybe(InRange(0.0, 1.0, "both"))), **json_rule(name="max_rate")},
    )

    def __post_init__(self) -> None:
        check_fields(self)

    @property
    def sampling(self) -> Sampling:
        return Sampling(self.extraction_temperature, self.extraction_top_k)

    @property
    def tokens(self) -> int:
        """The tokens a record needs to be tested: its prefix and its suffix."""
        return self.extraction_prefix + self.extraction_suffix

    @json_property()
    def near_verbatim(self) -> float:
        """The largest normalised edit distance of a near-verbatim continuation."""
        return NEAR_VERBATIM

    @json_property()
    def discoverable(self) -> tuple[tuple[int, float], ...]:
        """The (n, p) pairs of (n, p)-discoverable extraction reported."""
        return DISCOVERABLE


#: The extraction test with every option at its default.
DEFAULT_EXTRACTION: Final = ExtractionSettings()
