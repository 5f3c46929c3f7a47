"""What the attacks take from the streaming of an audit.

The single-process engine scores the reference models on the target's reads
(:mod:`epsstar.audit.engines.one_pass`); an audit on a Dask cluster
computes the same log-odds on the workers, partition by partition
(:mod:`epsstar.audit.engines.dask_audit`). Both hand them over in this record. The attacks
that read the records (QMIA) or the blind classifier's log-odds (the leak beyond the blind
baseline) find them here too, with the audit's own losses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from epsstar.audit.attacks.references import ReferenceConfidences
from epsstar.audit.attacks.sequences import TextInputs
from epsstar.audit.data.records import Records
from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import FloatArray

__all__ = ["AttackInputs"]

Pair = tuple[FloatArray, FloatArray]


@dataclass(frozen=True, slots=True)
class AttackInputs:
    """The target's log-odds of the true label on the training and population records,
    and the reference models' (``None``: not read); the audit's losses on both tables, the
    records and the blind classifier's log-likelihood ratios (``None``: not available); of a
    language model on text records, ``text``, the per-sequence statistics of the text attacks
    (:mod:`.sequences`)."""

    target: Pair | None = field(default=None, repr=False)
    references: ReferenceConfidences | None = None
    losses: Pair | None = field(default=None, repr=False)
    records: Records | None = field(default=None, repr=False)
    blind: Pair | None = field(default=None, repr=False)
    text: TextInputs | None = None

    def with_references(self) -> tuple[Pair, ReferenceConfidences]:
        """The target's and the reference models' log-odds, which must have been read."""
        if self.target is None or self.references is None:
            raise InvalidInputError("this attack needs reference models. Found none.")
        return self.target, self.references

    def audit_losses(self, attack: str) -> Pair:
        """The audit's losses on every row of both tables."""
        if self.losses is None:
            raise InvalidInputError(
                f"the {attack} attack needs every record's loss; the tables were summarised "
                f"(too large to keep one loss per row). Found summaries."
            )
        return self.losses

    def record_tables(self, attack: str) -> Records:
        """The records of both tables."""
        if self.records is None:
            raise InvalidInputError(
                f"the {attack} attack needs the records, which the dask engine keeps on the "
                f"cluster. Found engine 'dask'."
            )
        return self.records

    def blind_log_odds(self, attack: str) -> Pair:
        """The blind classifier's log-likelihood ratio of every row of both tables."""
        if self.blind is None:
            raise InvalidInputError(
                f"the {attack} attack needs the blind baseline, which was skipped. Found "
                f"--no-blind-baseline."
            )
        return self.blind

    def text_for(self, attack: str) -> TextInputs:
        """The per-sequence statistics of a text audit, or a one-line refusal naming
        ``attack``."""
        if self.text is None:
            raise InvalidInputError(
                f"the {attack} attack scores text records read by a language model "
                "(--text-column). Found a model without text records."
            )
        return self.text
