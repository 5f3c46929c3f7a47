"""Reference models: the records of their confidences, and the checks they must pass.

An offline reference-model attack (:mod:`epsstar.statistics.attacks`) compares the target
model with K models trained the way it was, on data that exclude every record whose
membership is tested as a non-member: the population records (the test stays valid only
if they are OUT for every reference model; the user asserts this). Each reference model
is loaded by the loader its suffix chooses (the ``epsstar.loaders`` entry points), must
stand for the target's classes in the same order, and is streamed over the training and
population tables with the target's label map (:mod:`epsstar.audit.engines.references`).
What is kept per record is the log-odds ``φ = log(p_y / (1 − p_y))`` of the true label,
minus the logit loss, exact from logits (:mod:`epsstar.statistics.attacks.confidence`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from epsstar.audit.data.tables.labels import LabelMap
from epsstar.audit.output.provenance import ReferenceModel
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.statistics._validation import FloatArray

__all__ = ["ReferenceConfidences", "check_reference_paths", "check_stated_classes"]


@dataclass(frozen=True, slots=True)
class ReferenceConfidences:
    """The K reference models' log-odds of the true label: ``train`` (K, n_train) and
    ``population`` (K, n_population); ``models`` their files, SHA-256 and loaders."""

    train: FloatArray = field(repr=False)
    population: FloatArray = field(repr=False)
    models: tuple[ReferenceModel, ...]

    @property
    def count(self) -> int:
        return len(self.models)


def check_reference_paths(paths: Sequence[str | Path]) -> tuple[Path, ...]:
    """The reference model files (or model folders), each checked to exist, before any work
    starts."""
    if isinstance(paths, (str, Path)):
        raise InvalidInputError(
            f"reference_models must be a sequence of files. Found the single value {paths!r}."
        )
    checked = tuple(Path(path) for path in paths)
    for path in checked:
        # A folder is a model too when a loader reads folders (a Hugging Face model's).
        if not path.is_file() and not path.is_dir():
            raise InputFileError(f"reference model: no such file. Found {str(path)!r}.")
    return checked


def check_stated_classes(stated: Sequence[object] | None, label_map: LabelMap, path: Path) -> None:
    """Refuse a reference model whose stated classes are not the target's, in order (each
    matched as the target's labels are: ``1``, ``1.0`` and ``"1"`` are one class)."""
    if stated is None:
        return
    theirs = list(np.asarray(stated, dtype=object).reshape(-1))
    try:
        codes = label_map.encode(np.asarray(theirs, dtype=object))
        same = len(theirs) == len(label_map) and bool((codes == np.arange(len(theirs))).all())
    except InvalidInputError:
        same = False
    if not same:
        raise InvalidInputError(
            f"reference model {str(path)!r} must stand for the target model's classes "
            f"{[str(c) for c in label_map.classes]}, in that order. "
            f"Found {[str(c) for c in theirs]}."
        )
