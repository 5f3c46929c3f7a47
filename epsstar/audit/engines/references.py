"""Reading the log-odds of the true label from the target and the reference models.

The single-process side of :mod:`epsstar.audit.attacks.references`: each model is loaded by
the loader its suffix chooses, checked to stand for the target's classes, and streamed over
both tables with the target's label map; what is kept per record is the log-odds of the
true label, minus the logit loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.audit.attacks.references import ReferenceConfidences, check_stated_classes
from epsstar.audit.data.column_match import ColumnMatch, match_model_columns
from epsstar.audit.data.files import sha256_of
from epsstar.audit.data.progress import Progress
from epsstar.audit.data.reading import TableReading
from epsstar.audit.data.tables import LabelMap, iter_batches, read_schema
from epsstar.audit.engines.streaming import (
    BatchReading,
    batch_losses,
    check_width,
    predict_batch,
    stream_table,
)
from epsstar.audit.model.plugins import LoadedModel
from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import FloatArray

__all__ = ["attack_inputs", "log_odds_of", "reference_confidences"]


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
            bool(getattr(model, "accepts_missing", False)),
        )
        groups.setdefault(key, []).append((index, match))
    chunks: list[list[FloatArray]] = [[] for _ in loaded]
    for (file_columns, *_), members in groups.items():
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
            missing=bool(getattr(first, "accepts_missing", False)),
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


def attack_inputs(
    target: tuple[LoadedModel, Path],
    reference_models: Sequence[Path],
    reading: TableReading,
    label_map: LabelMap,
    *,
    logit_losses: tuple[FloatArray, FloatArray] | None = None,
    trust: bool = False,
    progress: Progress | None = None,
) -> AttackInputs:
    """The target's and the reference models' log-odds of the true label on both tables.

    ``logit_losses`` are the target's logit losses when the audit measured them already
    (otherwise the target is streamed again).
    """
    if logit_losses is not None:
        target_log_odds = (-logit_losses[0], -logit_losses[1])
    else:
        target_log_odds = log_odds_of(target[0], target[1], reading, label_map)
    references = reference_confidences(
        reference_models, reading, label_map, trust=trust, progress=progress
    )
    return AttackInputs(target_log_odds, references)
