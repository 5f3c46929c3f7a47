"""The record of what is particular to a text audit: ``text`` in the audit's JSON.

A language model audited on text records (:mod:`epsstar.audit.text_run`) has its result's
usual fields (Epsilon* of the mean token loss, the attacks' records) and this record: the
model (architecture, context, tokenizer, adapter), the text column, the tokens scored, the
records longer than the context that were scored in sliding windows, the population records
also found verbatim among the training records, the blind baseline (whether the premise
holds: a classifier that sees only the texts cannot tell the two sides apart) and the most
exposed training records, with text excerpts unless they were hidden (``--no-record-text``).
"""

from __future__ import annotations

from dataclasses import dataclass

from epsstar.audit.model.text_model import TextModelInfo
from epsstar.plumbing.json_types import JsonObject
from epsstar.statistics.bounds.from_counts import EpsilonLowerBound
from epsstar.statistics.names import AttackName
from epsstar.statistics.results import EpsilonStarResult

__all__ = [
    "EXCERPT_CHARACTERS",
    "BlindBaseline",
    "ExposedRecord",
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
class WindowsUsed:
    """The records longer than the model's context, scored in windows of ``context`` tokens
    each ``stride`` tokens after the last: how many, and the first rows (0-based)."""

    context: int
    stride: int
    records: int
    rows: tuple[int, ...]

    def to_dict(self) -> JsonObject:
        return {
            "context": self.context,
            "stride": self.stride,
            "records": self.records,
            "first_rows": list(self.rows),
        }


@dataclass(frozen=True, slots=True)
class ExposedRecord:
    """A training record an attack finds most member-like: its row, its score, the share
    of non-members scored at or below it (the false-positive rate of the test that flags
    it), its tokens and an excerpt (``None``: hidden)."""

    row: int
    attack: AttackName
    score: float
    nonmembers_at_or_below: float
    tokens: int
    excerpt: str | None

    def to_dict(self) -> JsonObject:
        return {
            "row": self.row,
            "attack": self.attack,
            "score": self.score,
            "nonmembers_at_or_below": self.nonmembers_at_or_below,
            "tokens": self.tokens,
            "excerpt": self.excerpt,
        }


@dataclass(frozen=True, slots=True)
class BlindBaseline:
    """A model-free classifier's membership test on the texts alone (:mod:`epsstar.audit.
    attacks.blind_text`): its Epsilon*, held-out lower bound and AUC on ``n_members`` and
    ``n_nonmembers`` records, and whether the premise holds (its lower bound is 0)."""

    epsilon: EpsilonStarResult
    lower_bound: EpsilonLowerBound
    auc: float
    classifier: str
    folds: int
    n_members: int
    n_nonmembers: int

    @property
    def premise_holds(self) -> bool:
        """No evidence that the two sides differ without the model: the blind lower bound
        is 0 at the audit's confidence."""
        return self.lower_bound.epsilon <= 0.0

    def to_dict(self) -> JsonObject:
        return {
            "epsilon_star": self.epsilon.epsilon,
            "epsilon_lower_bound": self.lower_bound.epsilon,
            "auc": self.auc,
            "classifier": self.classifier,
            "folds": self.folds,
            "n_members": self.n_members,
            "n_nonmembers": self.n_nonmembers,
            "premise_holds": self.premise_holds,
        }


@dataclass(frozen=True, slots=True)
class TextAudit:
    """What is particular to a text audit (see the module docstring)."""

    model: TextModelInfo
    text_column: str | None
    tokens: tuple[int, int]
    windows: tuple[WindowsUsed, WindowsUsed]
    shared_records: int
    exposed: tuple[ExposedRecord, ...] = ()
    record_text: bool = True
    blind_baseline: BlindBaseline | None = None

    @property
    def windowed_records(self) -> int:
        return sum(side.records for side in self.windows)

    def to_dict(self) -> JsonObject:
        train, population = self.windows
        return {
            "model": self.model.to_dict(),
            "text_column": self.text_column,
            "tokens": {"train": self.tokens[0], "population": self.tokens[1]},
            "windows": {"train": train.to_dict(), "population": population.to_dict()},
            "shared_records": self.shared_records,
            "record_text": self.record_text,
            "most_exposed": [record.to_dict() for record in self.exposed],
            "blind_baseline": None
            if self.blind_baseline is None
            else self.blind_baseline.to_dict(),
            "premise_holds": None
            if self.blind_baseline is None
            else self.blind_baseline.premise_holds,
        }
