"""The record of what is particular to a text audit: ``text`` in the audit's JSON.

A language model audited on text records (:mod:`epsstar.audit.text_run`) has its result's
usual fields (Epsilon* of the mean token loss, the attacks' records) and this record: the
model (architecture, context, tokenizer, adapter), the text column, the tokens scored, the
records longer than the context that were scored in sliding windows, the population records
also found verbatim among the training records, the blind baseline (whether the premise
holds: a classifier that sees only the texts cannot tell the two sides apart), the most
exposed training records, with text excerpts unless they were hidden (``--no-record-text``),
and what the model repeats when asked (:class:`Extraction`, ``--extraction``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from epsstar.audit.data.extraction_settings import ExtractionSettings
from epsstar.audit.model.text_model import TextModelInfo
from epsstar.plumbing.records.by_side import BySide
from epsstar.plumbing.records.json_records import JsonRecord, json_property, json_rule
from epsstar.statistics.attacks.extraction import ExtractionRate
from epsstar.statistics.bounds.from_counts import EpsilonLowerBound
from epsstar.statistics.names import AttackName
from epsstar.statistics.results import EpsilonStarResult

__all__ = [
    "EXCERPT_CHARACTERS",
    "BlindBaseline",
    "ExposedRecord",
    "ExtractedRecord",
    "Extraction",
    "ExtractionSide",
    "TextAudit",
    "WindowsUsed",
    "excerpt",
]

#: Most characters of a record shown as its excerpt.
EXCERPT_CHARACTERS = 160


def excerpt(text: str, limit: int = EXCERPT_CHARACTERS) -> str:
    """``text`` on one line (runs of white space made one space), cut to ``limit``
    characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


@dataclass(frozen=True, slots=True)
class WindowsUsed(JsonRecord):
    """The records longer than the model's context, scored in windows of ``context`` tokens
    each ``stride`` tokens after the last: how many, and the first rows (0-based)."""

    context: int
    stride: int
    records: int
    rows: tuple[int, ...] = field(metadata=json_rule(name="first_rows"))


@dataclass(frozen=True, slots=True)
class ExposedRecord(JsonRecord):
    """A training record an attack finds most member-like: its row, its score, the share
    of non-members scored at or below it (the false-positive rate of the test that flags
    it), its tokens and an excerpt (``None``: hidden)."""

    row: int
    attack: AttackName
    score: float
    nonmembers_at_or_below: float
    tokens: int
    excerpt: str | None


@dataclass(frozen=True, slots=True)
class BlindBaseline(JsonRecord):
    """A model-free classifier's membership test on the texts alone (:mod:`epsstar.audit.
    attacks.blind_text`): its Epsilon*, held-out lower bound and AUC on ``n_members`` and
    ``n_nonmembers`` records, and whether the premise holds (its lower bound is 0)."""

    epsilon: EpsilonStarResult = field(metadata=json_rule(skip=True))
    lower_bound: EpsilonLowerBound = field(metadata=json_rule(skip=True))
    auc: float
    classifier: str
    folds: int
    n_members: int
    n_nonmembers: int

    @json_property(after="epsilon")
    def epsilon_star(self) -> float:
        return self.epsilon.epsilon

    @json_property(after="lower_bound")
    def epsilon_lower_bound(self) -> float:
        return self.lower_bound.epsilon

    @json_property()
    def premise_holds(self) -> bool:
        """No evidence that the two sides differ without the model: the blind lower bound
        is 0 at the audit's confidence."""
        return self.lower_bound.epsilon <= 0.0


@dataclass(frozen=True, slots=True)
class ExtractionSide(JsonRecord):
    """The records of one side drawn for the extraction test: how many were drawn, and how
    many of them were too short for a prefix and a suffix (skipped)."""

    drawn: int
    too_short: int

    @json_property()
    def tested(self) -> int:
        return self.drawn - self.too_short


@dataclass(frozen=True, slots=True)
class ExtractedRecord(JsonRecord):
    """A training record whose suffix the model repeats most readily: its row, ``log p_z``
    (the log-probability that one sampled continuation of its prefix is its suffix), whether
    the greedy continuation is its suffix, that continuation's normalised edit distance to
    it, and an excerpt (``None``: hidden)."""

    row: int
    log_p_z: float
    greedy_exact: bool
    greedy_distance: float
    excerpt: str | None

    @json_property(after="log_p_z")
    def p_z(self) -> float:
        return math.exp(self.log_p_z)


@dataclass(frozen=True, slots=True)
class Extraction(JsonRecord):
    """What the model repeats (:mod:`epsstar.audit.text_extraction`): the settings, each
    side's records, each measure's rates on the training records beside the population's,
    the training records most readily extracted and, with a limit, whether the training
    records' greedy exact extraction rate exceeds the population's by no more than it."""

    settings: ExtractionSettings
    sides: tuple[ExtractionSide, ExtractionSide] = field(metadata=json_rule(skip=True))
    rates: tuple[ExtractionRate, ...]
    most_extracted: tuple[ExtractedRecord, ...]

    @json_property(name="records", after="settings")
    def records_by_side(self) -> BySide[ExtractionSide]:
        return BySide(*self.sides)

    @property
    def greedy(self) -> ExtractionRate:
        """The measure the gate reads: greedy exact extraction."""
        return self.rates[0]

    @json_property()
    def passed(self) -> bool | None:
        """The excess of greedy exact extraction within ``max_rate`` (``None``: no limit)."""
        limit = self.settings.max_extraction_rate
        return None if limit is None else self.greedy.excess <= limit


@dataclass(frozen=True, slots=True)
class TextAudit(JsonRecord):
    """What is particular to a text audit (see the module docstring)."""

    model: TextModelInfo
    text_column: str | None
    tokens: tuple[int, int] = field(metadata=json_rule(skip=True))
    windows: tuple[WindowsUsed, WindowsUsed] = field(metadata=json_rule(skip=True))
    shared_records: int
    exposed: tuple[ExposedRecord, ...] = field(default=(), metadata=json_rule(skip=True))
    record_text: bool = True
    blind_baseline: BlindBaseline | None = None
    extraction: Extraction | None = field(default=None, metadata=json_rule(omit_if_none=True))

    @property
    def windowed_records(self) -> int:
        return sum(side.records for side in self.windows)

    @property
    def extraction_passed(self) -> bool | None:
        """The extraction test's gate (``None``: no test, or no limit): what the exit code
        and the report's release-gate card read."""
        return None if self.extraction is None else self.extraction.passed

    @json_property(name="tokens", after="tokens")
    def tokens_by_side(self) -> BySide[int]:
        return BySide(*self.tokens)

    @json_property(name="windows", after="windows")
    def windows_by_side(self) -> BySide[WindowsUsed]:
        return BySide(*self.windows)

    @json_property(after="record_text")
    def most_exposed(self) -> tuple[ExposedRecord, ...]:
        """The exposed records, written after whether their text is shown."""
        return self.exposed

    @json_property()
    def premise_holds(self) -> bool | None:
        return None if self.blind_baseline is None else self.blind_baseline.premise_holds
