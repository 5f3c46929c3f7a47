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

from epsstar.audit.data.column_match import ColumnMatch, match_model_columns
from epsstar.audit.data.files import sha256_of
from epsstar.audit.data.tables import LabelMap, iter_batches, read_schema
from epsstar.audit.engines.streaming import (
    BatchReading,
    Progress,
    batch_losses,
    check_width,
    predict_batch,
    stream_table,
)
from epsstar.audit.model.plugins import LoadedModel
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
    """Load every reference model and stream both tables through them (see the module
    docstring). A model that cannot be loaded, states other classes or outputs another
    number of classes is refused, its file named.

    Each table is read once for all the models that take the same columns (usually all
    of them) and every batch is handed to each model in turn, so K models cost K model
    calls but one read; the log-odds are those of :func:`log_odds_of`, model by model.
    """
    from epsstar.audit.model.plugins import loader_for_path

    loaded, models = [], []
    for path in paths:
        try:
            plugin, info = loader_for_path(path)
            model = plugin.load(path, outputs=None, trust=trust)
        except InvalidInputError as error:
            raise type(error)(f"reference model {str(path)!r}: {error}") from None
        check_stated_classes(getattr(model, "classes", None), label_map, path)
        loaded.append((model, path))
        files = [Path(f) for f in getattr(model, "files", (path,))]
        models.append(
            {
                "path": str(path),
                "sha256": sha256_of(path),
                "loader": info.name,
                "files": [{"path": str(f), "sha256": sha256_of(f)} for f in files],
            }
        )
    train = _log_odds_together(loaded, reading, label_map, "train", progress)
    population = _log_odds_together(loaded, reading, label_map, "population", progress)
    return ReferenceConfidences(np.vstack(train), np.vstack(population), tuple(models))


def _log_odds_together(
    loaded: Sequence[tuple[LoadedModel, Path]],
    reading: TableReading,
    label_map: LabelMap,
    role: str,
    progress: Progress | None,
) -> list[FloatArray]:
    """Each model's log-odds of the true label on one table (``role``), in order: the
    models that take the same columns (and input type) share one read of the table."""
    path = reading.train if role == "train" else reading.population
    columns = read_schema(path).columns
    groups: dict[tuple[Any, ...], list[tuple[int, ColumnMatch]]] = {}
    for index, (model, model_path) in enumerate(loaded):
        try:
            match = match_model_columns(
                model,
                columns,
                reading.label_column,
                features=reading.features,
                model_path=model_path,
                data=path,
            )
        except InvalidInputError as error:
            raise InvalidInputError(f"reference model {str(model_path)!r}: {error}") from None
        key = (
            match.file_columns,
            str(getattr(model, "input_dtype", None)),
            bool(getattr(model, "takes_text", False)),
        )
        groups.setdefault(key, []).append((index, match))
    chunks: list[list[FloatArray]] = [[] for _ in loaded]
    for (file_columns, _, _), members in groups.items():
        first = loaded[members[0][0]][0]
        if progress is not None:
            progress.start(role, path)
        for batch in iter_batches(
            path,
            label_column=reading.label_column,
            features=file_columns,
            batch_size=reading.batch_size,
            progress=None if progress is None else progress.advance,
            input_dtype=getattr(first, "input_dtype", None),
            text=bool(getattr(first, "takes_text", False)),
        ):
            labels = label_map.encode(
                batch.labels, source=f"{path}: label column {reading.label_column!r}"
            )
            for index, match in members:
                model, model_path = loaded[index]
                names = match.model_names if match.renamed else None
                batch_reading = BatchReading(role, "logit", names, reading.input_shape)
                try:
                    predictions = predict_batch(model, batch.features, batch_reading)
                    check_width(predictions, label_map, role)
                    losses = batch_losses(model, labels, predictions, batch_reading)
                except InvalidInputError as error:
                    raise InvalidInputError(
                        f"reference model {str(model_path)!r}: {error}"
                    ) from None
                chunks[index].append(-losses)
    return [np.concatenate(parts) for parts in chunks]
