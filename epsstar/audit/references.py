"""Reference models: load each one and read its confidence on the audited records.

An offline reference-model attack (:mod:`epsstar.statistics.attacks`) compares the target
model with K models trained the way it was, on data that exclude every record whose
membership is tested as a non-member: the population records (the test stays valid only
if they are OUT for every reference model; the user asserts this). Each reference model
is loaded by the loader its suffix chooses (the ``epsstar.loaders`` entry points), must
stand for the target's classes in the same order, and is streamed over the training and
population tables with the target's label map. What is kept per record is the log-odds
``φ = log(p_y / (1 − p_y))`` of the true label, minus the logit loss, exact from logits
(:mod:`epsstar.statistics.attacks.confidence`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from epsstar.audit.column_match import match_model_columns
from epsstar.audit.files import sha256_of
from epsstar.audit.plugins import LoadedModel
from epsstar.audit.streaming import Progress, stream_table
from epsstar.audit.tables import LabelMap, read_schema
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.statistics._validation import FloatArray

__all__ = [
    "ReferenceConfidences",
    "TableReading",
    "check_reference_paths",
    "check_stated_classes",
    "log_odds_of",
]


@dataclass(frozen=True, slots=True)
class TableReading:
    """How the audit reads its two tables (the same for the target and every reference)."""

    train: Path
    population: Path
    label_column: str
    features: Sequence[str] | None = None
    batch_size: int = 16_384
    input_shape: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class ReferenceConfidences:
    """The K reference models' log-odds of the true label: ``train`` (K, n_train) and
    ``population`` (K, n_population); ``models`` their files, SHA-256 and loaders."""

    train: FloatArray = field(repr=False)
    population: FloatArray = field(repr=False)
    models: tuple[dict[str, Any], ...]

    @property
    def count(self) -> int:
        return len(self.models)


def check_reference_paths(paths: Sequence[str | Path]) -> tuple[Path, ...]:
    """The reference model files, each checked to exist, before any work starts."""
    if isinstance(paths, (str, Path)):
        raise InvalidInputError(
            f"reference_models must be a sequence of files. Found the single value {paths!r}."
        )
    checked = tuple(Path(path) for path in paths)
    for path in checked:
        if path.is_dir():
            raise InputFileError(
                f"reference model: must be a file, not a directory. Found {str(path)!r}."
            )
        if not path.is_file():
            raise InputFileError(f"reference model: no such file. Found {str(path)!r}.")
    return checked


def log_odds_of(
    model: LoadedModel,
    model_path: Path,
    reading: TableReading,
    label_map: LabelMap,
    *,
    progress: Progress | None = None,
) -> tuple[FloatArray, FloatArray]:
    """``model``'s log-odds of the true label on the training and the population table,
    labels encoded with ``label_map``."""
    result = []
    for role, path in (("train", reading.train), ("population", reading.population)):
        match = match_model_columns(
            model,
            read_schema(path).columns,
            reading.label_column,
            features=reading.features,
            model_path=model_path,
            data=path,
        )
        streamed = stream_table(
            model,
            path,
            role=role,
            label_column=reading.label_column,
            features=match.file_columns,
            model_names=match.model_names if match.renamed else None,
            batch_size=reading.batch_size,
            loss="logit",
            label_map=label_map,
            progress=progress,
            input_shape=reading.input_shape,
        )
        result.append(-streamed.losses)
    return result[0], result[1]


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


def reference_confidences(
    paths: Sequence[Path],
    reading: TableReading,
    label_map: LabelMap,
    *,
    trust: bool = False,
    progress: Progress | None = None,
) -> ReferenceConfidences:
    """Load every reference model and stream both tables through it (see the module
    docstring). A model that cannot be loaded, states other classes or outputs another
    number of classes is refused, its file named."""
    from epsstar.audit.plugins import loader_for_path

    train, population, models = [], [], []
    for path in paths:
        try:
            plugin, info = loader_for_path(path)
            model = plugin.load(path, outputs=None, trust=trust)
        except InvalidInputError as error:
            raise type(error)(f"reference model {str(path)!r}: {error}") from None
        check_stated_classes(getattr(model, "classes", None), label_map, path)
        try:
            on_train, on_population = log_odds_of(
                model, path, reading, label_map, progress=progress
            )
        except InvalidInputError as error:
            raise InvalidInputError(f"reference model {str(path)!r}: {error}") from None
        train.append(on_train)
        population.append(on_population)
        models.append({"path": str(path), "sha256": sha256_of(path), "loader": info.name})
    return ReferenceConfidences(np.vstack(train), np.vstack(population), tuple(models))
