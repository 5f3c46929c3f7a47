"""What the reference-model attacks take from the streaming of an audit.

The single-process engine streams the reference models
(:func:`epsstar.audit.engines.references.attack_inputs`); an audit on a Dask cluster
computes the same log-odds on the workers, partition by partition
(:mod:`epsstar.audit.engines.dask_audit`). Both hand them over in this record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from epsstar.audit.attacks.references import ReferenceConfidences
from epsstar.statistics._validation import FloatArray

__all__ = ["AttackInputs"]


@dataclass(frozen=True, slots=True)
class AttackInputs:
    """The target's log-odds of the true label on the training and population records,
    and the reference models'."""

    target: tuple[FloatArray, FloatArray] = field(repr=False)
    references: ReferenceConfidences
