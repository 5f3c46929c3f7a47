"""Streaming one table through a loaded model: per-record losses and what utility needs.

:func:`stream_table` reads a table in batches (:func:`epsstar.audit.data.tables.iter_batches`),
asks the model for its predictions, encodes the labels with the model's classes
(:class:`~epsstar.audit.data.tables.LabelMap`) and turns predictions into losses with
:func:`epsstar.statistics.losses.compute_losses`, which also checks every prediction
(finite; probabilities in [0, 1], rows summing to 1). A model that says its
``input_dtype`` (as the built-in loaders do) has every feature checked to fit
that type before it sees it, the column and row named. It keeps, per table, the losses,
the number of correct predictions and, for the AUROC of a table that has one
(:func:`wants_auroc`), the encoded labels and the class scores, up to
:data:`MAX_AUROC_VALUES` numbers.

The label map is built from the model's classes and the width of its first prediction;
it is returned with the result, so that a second table is encoded the same way
(``label_map=first.label_map``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.data.checks import TableScan, row_hashes
from epsstar.audit.data.progress import Progress
from epsstar.audit.data.reading import TableRead
from epsstar.audit.data.tables.batches import iter_batches
from epsstar.audit.data.tables.formats import read_schema
from epsstar.audit.data.tables.labels import LabelMap, label_map_for
from epsstar.audit.engines.record_sample import RecordSample
from epsstar.audit.model.features import Features
from epsstar.audit.model.plugins import LoadedModel
from epsstar.exceptions import InvalidInputError
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.losses import compute_losses
from epsstar.statistics.summaries.loss_summary import LossSummary
from epsstar.statistics.utility import Utility, auroc

__all__ = [
    "MAX_AUROC_VALUES",
    "BatchScorer",
    "Progress",
    "StreamedTable",
    "batch_losses",
    "check_width",
    "predict_batch",
    "stream_table",
    "wants_auroc",
]

MAX_AUROC_VALUES = 50_000_000
"""AUROC needs every class score; past this many numbers per table they are dropped."""


class BatchScorer(Protocol):
    """Told every batch the target is streamed on, read and encoded once (the reference
    models of :mod:`epsstar.audit.engines.one_pass`)."""

    def add(
        self,
        features: Features,
        labels: NDArray[np.int64],
        predictions: NDArray[np.float64],
        label_map: LabelMap,
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class StreamedTable:
    """What streaming one table through a model gave.

    ``losses`` has one loss per row. ``labels`` (class indices) and ``scores`` (one score
    per row for binary models, one column of class probabilities per class otherwise) are
    kept for the AUROC; both are ``None`` when they would exceed
    :data:`MAX_AUROC_VALUES`. ``n_outputs`` is the number of classes the model's output
    stands for (2 for a binary model returning one value per record).
    """

    losses: FloatArray = field(repr=False)
    labels: NDArray[np.int64] | None = field(repr=False)
    scores: NDArray[np.float64] | None = field(repr=False)
    correct: int
    rows: int
    n_outputs: int
    label_map: LabelMap
    #: Row hashes and rows per class, for the checks of :mod:`epsstar.audit.data.checks`.
    scan: TableScan = field(repr=False)
    #: The losses' summary when the table is too large to hold one per row
    #: (:mod:`epsstar.audit.engines.summaries`); ``losses``, ``labels`` and ``scores`` then hold
    #: those of a random sample of the rows.
    summary: LossSummary | None = field(default=None, repr=False)

    def utility(self, *, with_auroc: bool = True) -> Utility:
        """Accuracy and (unless ``with_auroc`` is false, or the scores were dropped) AUROC;
        of a summarised table, the AUROC of its random sample of rows."""
        accuracy = self.correct / self.rows
        if not with_auroc:
            return Utility(self.rows, accuracy, None, "not computed for training data")
        if self.labels is None or self.scores is None:
            return Utility(self.rows, accuracy, None, "too many rows x classes to keep for AUROC")
        value, note = auroc(self.labels, self.scores, self.n_outputs)
        if self.summary is not None and value is not None:
            sample = f"on a random sample of {self.labels.size:,} rows"
            note = sample if note is None else f"{note}, {sample}"
        return Utility(self.rows, accuracy, value, note)


def _n_outputs(predictions: NDArray[Any]) -> int:
    return 2 if predictions.ndim == 1 or predictions.shape[1] == 1 else int(predictions.shape[1])


def wants_auroc(role: str, n_outputs: int) -> bool:
    """Whether a table's AUROC is computed: the population's always; the training data's
    for two classes only (a multi-class AUROC costs one sort per class, and on training data
    accuracy suffices), so a multi-class model's class scores on it are not kept."""
    return role != "train" or n_outputs <= 2


def _predicted(predictions: NDArray[np.float64], output_kind: str) -> NDArray[Any]:
    """The predicted class index of every record of one batch of checked predictions."""
    if predictions.ndim == 1 or predictions.shape[1] == 1:
        cut = 0.5 if output_kind == "probabilities" else 0.0
        return (predictions.reshape(-1) >= cut).astype(np.int64)
    predicted: NDArray[np.intp] = np.argmax(predictions, axis=1)
    return predicted


def _class_scores(predictions: NDArray[np.float64], output_kind: str) -> NDArray[np.float64]:
    """The AUROC scores of one batch of checked predictions."""
    if predictions.ndim == 1 or predictions.shape[1] == 1:
        return predictions.reshape(-1)
    if predictions.shape[1] == 2:
        return predictions[:, 1] - predictions[:, 0]
    if output_kind == "logits":
        # softmax, worked out in one array: exp(z − max z) / Σ exp(z − max z), row by row
        probabilities: NDArray[np.float64] = predictions - predictions.max(axis=1, keepdims=True)
        np.exp(probabilities, out=probabilities)
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        return probabilities
    return predictions


@dataclass(slots=True)
class _Collected:
    """The running totals of one table (mutable; frozen into a :class:`StreamedTable`)."""

    losses: list[FloatArray] = field(default_factory=list)
    labels: list[NDArray[np.int64]] | None = field(default_factory=list)
    scores: list[NDArray[np.float64]] | None = field(default_factory=list)
    correct: int = 0
    rows: int = 0
    hashes: list[NDArray[np.uint64]] = field(default_factory=list)
    class_counts: NDArray[np.int64] | None = None

    def add(self, losses: FloatArray, labels: NDArray[np.int64], predicted: NDArray[Any]) -> None:
        self.losses.append(losses)
        self.correct += int(np.count_nonzero(predicted == labels))
        self.rows += labels.size

    def scan(self, features: Features, labels: NDArray[np.int64], n_classes: int) -> None:
        """Hash the batch's rows and count its classes (see :class:`TableScan`)."""
        self.hashes.append(row_hashes(features, labels))
        counts = np.bincount(labels, minlength=n_classes)
        self.class_counts = counts if self.class_counts is None else self.class_counts + counts

    def keep_scores(self, labels: NDArray[np.int64], scores: NDArray[np.float64]) -> None:
        if self.labels is None or self.scores is None:
            return
        width = scores.shape[1] if scores.ndim == 2 else 1
        if self.rows * width > MAX_AUROC_VALUES:  # drop the scores, not the audit
            self.labels = self.scores = None
            return
        self.labels.append(labels)
        self.scores.append(scores)


def _refused(role: str, kind: str, requested: bool, error: InvalidInputError) -> InvalidInputError:
    """The statistics layer's refusal of the predictions, said of the model and the table."""
    how = "as requested" if requested else "as detected"
    advice = (
        "; pass outputs='logits' if the model returns logits"
        if kind == "probabilities" and not requested
        else ""
    )
    return InvalidInputError(
        f"the model's predictions on the {role} data ({kind}, {how}{advice}): {error}"
    )


def _as_model_inputs(
    features: Features, names: Sequence[str] | None, shape: Sequence[int] | None
) -> Features:
    """The batch's columns under the model's names, or reshaped into one tensor column."""
    if shape is not None:
        name = names[0] if names is not None and len(names) == 1 else "X"
        return Features((name,), (features.tensor(shape),))
    return features if names is None else features.rename(names)


def _handed(model: LoadedModel, features: Features) -> Features | NDArray[Any]:
    """What ``model.predict`` is given: :class:`Features` when the model says it takes them
    (``accepts_features``), else a numeric array, ``(rows, d)`` or a tensor column as is."""
    if getattr(model, "accepts_features", False):
        return features
    return features.columns[0] if features.is_tensor else features.matrix()


def predict_batch(
    model: LoadedModel, features: Features, reading: TableRead
) -> NDArray[np.float64]:
    """``model``'s predictions on one batch, as float64."""
    inputs = _as_model_inputs(features, reading.model_names, reading.input_shape)
    return np.asarray(model.predict(_handed(model, inputs)), dtype=np.float64)


def check_width(predictions: NDArray[np.float64], label_map: LabelMap, role: str) -> None:
    """Refuse predictions that do not stand for the ``label_map``'s classes."""
    n_outputs = _n_outputs(predictions)
    if len(label_map) != n_outputs:
        raise InvalidInputError(
            f"the model's predictions on the {role} data must stand for its "
            f"{len(label_map)} classes, as before. Found {n_outputs}."
        )


def batch_losses(
    model: LoadedModel,
    labels: NDArray[np.int64],
    predictions: NDArray[np.float64],
    reading: TableRead,
) -> FloatArray:
    """The per-record losses of one batch (every prediction checked), refused in one line
    that says how the outputs were read."""
    kind = model.output_kind
    try:
        return compute_losses(labels, predictions, loss=reading.loss, outputs=kind)
    except InvalidInputError as error:
        raise _refused(reading.role, kind, reading.outputs_requested, error) from None


def stream_table(
    model: LoadedModel,
    read: TableRead,
    *,
    classes: Sequence[object] | None = None,
    label_map: LabelMap | None = None,
    progress: Progress | None = None,
    sample: RecordSample | None = None,
    scorer: BatchScorer | None = None,
) -> StreamedTable:
    """Run ``model`` over the table ``read`` names, in batches of ``read.batch_size`` rows.

    Labels are encoded with ``label_map`` if given, else with a map built from
    ``classes`` (the model's classes in output-column order; ``None`` means 0..K−1) and
    the width of the first prediction. ``progress`` is told as the rows are read.
    ``sample``, when given, is offered every batch's records (the blind baseline's, kept
    so that the file is not read again); ``scorer``, when given, every batch with its encoded
    labels and the model's predictions (other models scored on the same read).
    """
    if progress is not None:
        rows = read_schema(read.path, separator=read.separator).n_rows
        progress.start(read.role, read.path, rows)
    collected = _Collected()
    n_outputs = 0
    for batch in iter_batches(
        read.path,
        label_column=read.label_column,
        features=read.columns,
        batch_size=read.batch_size,
        progress=None if progress is None else progress.advance,
        input_dtype=getattr(model, "input_dtype", None),
        text=bool(getattr(model, "takes_text", False)),
        missing=bool(getattr(model, "accepts_missing", False)),
        separator=read.separator,
    ):
        predictions = predict_batch(model, batch.features, read)
        n_outputs = _n_outputs(predictions)
        if label_map is None:
            label_map = label_map_for(classes, n_outputs)
            if not wants_auroc(read.role, n_outputs):
                collected.labels = collected.scores = None
        check_width(predictions, label_map, read.role)
        labels = label_map.encode(batch.labels, source=read.source)
        losses = batch_losses(model, labels, predictions, read)
        collected.add(losses, labels, _predicted(predictions, model.output_kind))
        if collected.scores is not None:
            collected.keep_scores(labels, _class_scores(predictions, model.output_kind))
        collected.scan(batch.features, labels, len(label_map))
        if sample is not None:
            sample.add(batch.features, batch.labels)
        if scorer is not None:
            scorer.add(batch.features, labels, predictions, label_map)
    assert label_map is not None  # iter_batches yields at least one batch or raises
    assert collected.class_counts is not None
    return StreamedTable(
        losses=np.concatenate(collected.losses),
        labels=None if collected.labels is None else np.concatenate(collected.labels),
        scores=None if collected.scores is None else np.concatenate(collected.scores),
        correct=collected.correct,
        rows=collected.rows,
        n_outputs=n_outputs,
        label_map=label_map,
        scan=TableScan(np.concatenate(collected.hashes), collected.class_counts),
    )
