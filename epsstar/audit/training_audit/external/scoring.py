"""Scoring canary records with a saved model, as ``epsstar audit`` scores records.

The canaries' table is read through the model exactly as the audit reads a data set
(:meth:`~epsstar.audit.data.reading.Tables.match`, :func:`~epsstar.audit.engines.streaming.
stream_table`): by the column names the model records or ``--features``, with the model's
class labels, and each canary's score is its logit loss (``statistics/losses.py``) — low for a
record the model fits, as a member is. The model's declared privacy (the ``epsstar.privacy``
metadata ``epsstar train`` writes) comes back with the scores: it is the claim of a run when
the user states none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from epsstar.audit.data.reading import Tables
from epsstar.audit.engines.streaming import stream_table
from epsstar.audit.model.declared_privacy import DeclaredPrivacy
from epsstar.audit.model.loading import ModelFile, ModelObject
from epsstar.audit.training_audit.threat_models import CanaryKind
from epsstar.plumbing.files.digests import sha256_of
from epsstar.plumbing.records.json_types import JsonObject
from epsstar.statistics._validation import FloatArray

__all__ = ["ScoredModel", "score_canaries"]


@dataclass(frozen=True, slots=True)
class ScoredModel:
    """The canaries' losses under one saved model, and what identifies the model."""

    losses: dict[CanaryKind, FloatArray] = field(repr=False)
    model: str
    sha256: str
    loader: str
    declared: DeclaredPrivacy | None

    def describe(self) -> JsonObject:
        """The model's record in a run's JSON."""
        return {"file": self.model, "sha256": self.sha256, "loader": self.loader}


def score_canaries(
    model: ModelFile | ModelObject,
    tables: Mapping[CanaryKind, Path],
    label_column: str,
    features: tuple[str, ...] | None = None,
) -> ScoredModel:
    """The logit loss of every canary of each table in ``tables`` (by canary kind); a model in
    memory is identified by its type and the digest of its serialisation instead of a file."""
    loaded = model.load()
    losses: dict[CanaryKind, FloatArray] = {}
    for kind, path in tables.items():
        reading = Tables(path, path, label_column, features=features, loss="logit")
        match = reading.match(loaded.model, "population", model.path)
        streamed = stream_table(
            loaded.model,
            reading.read("population", match, outputs_requested=model.outputs_requested),
            classes=loaded.classes,
        )
        losses[kind] = streamed.losses
    declared = getattr(loaded.model, "declared_privacy", None)
    identity = loaded.identity
    return ScoredModel(
        losses=losses,
        model=model.path.name if identity is None else identity.described,
        sha256=sha256_of(model.path) if identity is None else identity.sha256 or "not hashed",
        loader=loaded.loader.name,
        declared=declared if isinstance(declared, DeclaredPrivacy) else None,
    )
