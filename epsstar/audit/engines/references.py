"""Reading the log-odds of the true label from the target and the reference models.

The single-process side of :mod:`epsstar.audit.attacks.references`: each model is loaded by
the loader its suffix chooses, checked to stand for the target's classes, and streamed over
both tables with the target's label map; what is kept per record is the log-odds of the
true label, minus the logit loss.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.attacks.references import ReferenceConfidences, check_stated_classes
from epsstar.audit.data.column_match import ColumnMatch
from epsstar.audit.data.progress import Progress
from epsstar.audit.data.reading import Role, TableRead, Tables
from epsstar.audit.data.tables.batches import iter_batches
from epsstar.audit.data.tables.formats import read_schema
from epsstar.audit.data.tables.labels import LabelMap
from epsstar.audit.engines.streaming import batch_losses, check_width, predict_batch, stream_table
from epsstar.audit.model.features import Features
from epsstar.audit.model.plugins import LoadedModel
from epsstar.audit.output.provenance import ReferenceModel
from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.runtime.device import CPU
from epsstar.statistics._validation import FloatArray

__all__ = [
    "ROLES",
    "batch_log_odds",
    "conversion_key",
    "load_references",
    "log_odds_of",
    "log_odds_together",
    "matched_models",
    "read_key",
    "reference_confidences",
]

ROLES: tuple[Role, Role] = ("train", "population")


def log_odds_of(
    model: LoadedModel,
    model_path: Path,
    tables: Tables,
    label_map: LabelMap,
    *,
    progress: Progress | None = None,
) -> tuple[FloatArray, FloatArray]:
    """``model``'s log-odds of the true label on the training and the population table,
    labels encoded with ``label_map``."""
    result = []
    for role in ROLES:
        read = tables.read(role, tables.match(model, role, model_path))
        streamed = stream_table(
            model, replace(read, loss="logit"), label_map=label_map, progress=progress
        )
        result.append(-streamed.losses)
    return result[0], result[1]


def reference_confidences(
    paths: Sequence[Path],
    tables: Tables,
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
    loaded, models = load_references(paths, trust=trust)
    for model, path in loaded:
        check_stated_classes(getattr(model, "classes", None), label_map, path)
    train, population = (
        log_odds_together(loaded, tables, label_map, role, progress) for role in ROLES
    )
    return ReferenceConfidences(np.vstack(train), np.vstack(population), tuple(models))


def load_references(
    paths: Sequence[Path], *, trust: bool = False, device: str = CPU
) -> tuple[list[tuple[LoadedModel, Path]], list[ReferenceModel]]:
    """Every reference model, loaded by the loader its suffix chooses, and its record; a model
    that cannot be loaded is refused, its file named. ``device`` (the target's ``--device``)
    is handed to the loaders that take one (the torch-based ones); the others run on the CPU
    as they always do."""
    from epsstar.audit.model.plugins import loader_for_path

    loaded, models = [], []
    for path in paths:
        try:
            plugin, info = loader_for_path(path)
            if device != CPU and getattr(plugin, "takes_device", False):
                load = getattr(plugin, "load")  # noqa: B009 - the extended signature
                model = load(path, outputs=None, trust=trust, device=device)
            else:
                model = plugin.load(path, outputs=None, trust=trust)
        except InvalidInputError as error:
            raise type(error)(f"reference model {str(path)!r}: {error}") from None
        loaded.append((model, path))
        models.append(ReferenceModel.of(path, info.name, getattr(model, "files", (path,))))
    return loaded, models


def read_key(model: LoadedModel, match: ColumnMatch) -> tuple[object, ...]:
    """What decides how ``model`` reads a table: the columns, the input type, text, missing
    values. Models of one key can share a read of the table."""
    return (match.file_columns, *conversion_key(model))


def conversion_key(model: LoadedModel) -> tuple[str, bool, bool]:
    """How ``model`` converts the columns it reads: its input type, whether it takes text,
    whether it takes missing values (what :func:`~epsstar.audit.data.tables.iter_batches` is
    told of the model)."""
    return (
        str(getattr(model, "input_dtype", None)),
        bool(getattr(model, "takes_text", False)),
        bool(getattr(model, "accepts_missing", False)),
    )


def matched_models(
    loaded: Sequence[tuple[LoadedModel, Path]], tables: Tables, role: Role
) -> dict[tuple[object, ...], list[tuple[int, ColumnMatch]]]:
    """The models grouped by what they read of the table of ``role`` (the columns, the
    input type and whether they take text), each with its column match."""
    columns = None
    groups: dict[tuple[object, ...], list[tuple[int, ColumnMatch]]] = {}
    for index, (model, model_path) in enumerate(loaded):
        try:
            match = tables.match(model, role, model_path, columns=columns)
        except InvalidInputError as error:
            raise InvalidInputError(f"reference model {str(model_path)!r}: {error}") from None
        groups.setdefault(read_key(model, match), []).append((index, match))
    return groups


def log_odds_together(
    loaded: Sequence[tuple[LoadedModel, Path]],
    tables: Tables,
    label_map: LabelMap,
    role: Role,
    progress: Progress | None,
) -> list[FloatArray]:
    """Each model's log-odds of the true label on one table (``role``), in order: the
    models that take the same columns (and input type) share one read of the table."""
    chunks: list[list[FloatArray]] = [[] for _ in loaded]
    for members in matched_models(loaded, tables, role).values():
        first = loaded[members[0][0]][0]
        reads = [replace(tables.read(role, match), loss="logit") for _, match in members]
        if progress is not None:
            rows = read_schema(reads[0].path, separator=tables.csv_separator).n_rows
            progress.start(role, reads[0].path, rows)
        for batch in iter_batches(
            reads[0].path,
            label_column=tables.label_column,
            features=reads[0].columns,
            batch_size=tables.batch_size,
            progress=None if progress is None else progress.advance,
            input_dtype=getattr(first, "input_dtype", None),
            text=bool(getattr(first, "takes_text", False)),
            missing=bool(getattr(first, "accepts_missing", False)),
            separator=tables.csv_separator,
        ):
            labels = label_map.encode(batch.labels, source=reads[0].source)
            for (index, _), read in zip(members, reads, strict=True):
                chunks[index].append(
                    batch_log_odds(loaded[index], batch.features, labels, label_map, read)
                )
    return [np.concatenate(parts) for parts in chunks]


def batch_log_odds(
    loaded: tuple[LoadedModel, Path],
    features: Features,
    labels: NDArray[np.int64],
    label_map: LabelMap,
    read: TableRead,
) -> FloatArray:
    """One reference model's log-odds of the true label (minus its logit loss) on one batch,
    its errors naming its file."""
    model, model_path = loaded
    try:
        predictions = predict_batch(model, features, read)
        check_width(predictions, label_map, read.role)
        return -batch_losses(model, labels, predictions, read)
    except InvalidInputError as error:
        raise InvalidInputError(f"reference model {str(model_path)!r}: {error}") from None
