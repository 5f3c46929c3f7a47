"""What the reference-model attacks take from the streaming of an audit.

The single-process engine streams the reference models
(:func:`epsstar.audit.engines.references.attack_inputs`); an audit on a Dask cluster
computes the same log-odds on the workers, partition by partition
(:mod:`epsstar.audit.engines.dask_audit`). Both hand them over in this record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from epsstar.audit.attacks.references import ReferenceConfidences
from epsstar.audit.attacks.sequences import TextInputs
from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import FloatArray

__all__ = ["AttackInputs"]


@dataclass(frozen=True, slots=True)
class AttackInputs:
    """The target's log-odds of the true label on the training and population records,
    and the reference models'; of a language model on text records, its per-token
    log-likelihood (minus the mean token loss), the reference models' and ``text``, the
    per-sequence statistics of the text attacks (:mod:`.sequences`)."""

    target: tuple[FloatArray, FloatArray] = field(repr=False)
    references: ReferenceConfidences
    text: TextInputs | None = None

    def text_for(self, attack: str) -> TextInputs:
        """The per-sequence statistics of a text audit, or a one-line refusal naming
        ``attack``."""
        if self.text is None:
            raise InvalidInputError(
                f"the {attack} attack scores text records read by a language model "
                "(--text-column). Found a model without text records."
            )
        return self.text
