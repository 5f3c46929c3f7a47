"""Model loaders, installed as ``epsstar.loaders``.

A loader turns a saved model file into an object that returns per-record
predictions; losses are computed from those predictions in core
(:mod:`epsstar.statistics.losses`), the same way for every loader.

The built-in loaders (:mod:`epsstar.loaders.onnx`, :mod:`epsstar.loaders.torchscript`,
:mod:`epsstar.loaders.sklearn`) are found through the ``epsstar.loaders`` entry-point
group like any plugin (:mod:`epsstar.audit.model.plugins`). This package holds what they share and
what a third-party loader may reuse: :class:`BatchedModel`, a
:class:`~epsstar.audit.model.plugins.LoadedModel` that checks the input width, casts the features,
predicts in chunks, checks that there is one prediction per record and detects logits vs
probabilities. The values of the predictions (finite; probabilities in ``[0, 1]``, rows
summing to 1) are checked once, where the losses are computed
(:func:`epsstar.statistics.losses.compute_losses`), whatever the loader.

Detecting logits vs probabilities (unless the caller says which with ``outputs=``):
predictions are read as probabilities when every value is in ``[0, 1]`` and, with two or
more columns, every row sums to 1 within :data:`epsstar.statistics.losses.ROW_SUM_TOLERANCE`;
otherwise as logits. The rule is applied to the model's outputs on a fixed probe of
49 rows (a row of zeros and 16 standard-normal rows scaled by 1, 10 and 100), or, when
the input width is unknown, to the first batch it predicts. A probability model always
passes; a logit model passes only if all its outputs on the probe happen to look like
probabilities, which the ×100 rows make unlikely for any model whose output depends on
its input. If it does happen, the audit refuses the later predictions on real data that
leave ``[0, 1]`` with an error that says to pass ``outputs="logits"``. The reading and its
reason are kept (:attr:`BatchedModel.output_reading`, an
:class:`~epsstar.audit.model.output_reading.OutputReading`); the audit records them and warns
when the rule's evidence is ambiguous.

Self-check: a subclass that can have the model's library score records itself implements
:meth:`BatchedModel._own_predictions`; the first :meth:`~BatchedModel.predict` call then
compares its first :data:`~epsstar.audit.model.own_predictions.SAMPLE_ROWS` records with
the library's own predictions and refuses the model on a mismatch
(:mod:`epsstar.audit.model.own_predictions`).

Objects in memory: a loader that also takes fitted models (``claims_object`` and
``load_object``, :class:`~epsstar.audit.model.plugins.ModelLoader`) builds the same model
class from the object, named in messages by :func:`object_source` and marked with its
:class:`~epsstar.audit.model.plugins.ObjectIdentity` by :func:`in_memory`;
:func:`instance_of` asks whether an object is of a library's types without importing it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Final, TypeVar

import numpy as np
from numpy.typing import DTypeLike, NDArray

from epsstar.audit.model.declared_privacy import DeclaredPrivacy
from epsstar.audit.model.features import Features, as_features
from epsstar.audit.model.output_reading import OutputReading, detect_reading
from epsstar.audit.model.own_predictions import SAMPLE_ROWS, OwnPredictions, check_own_predictions
from epsstar.audit.model.plugins import ObjectIdentity, OutputKind, type_name
from epsstar.exceptions import InvalidInputError
from epsstar.statistics.names import OUTPUT_KINDS

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "OUTPUT_KINDS",
    "BatchedModel",
    "check_outputs_argument",
    "first_line",
    "in_memory",
    "instance_of",
    "looks_like_probabilities",
    "object_source",
    "probabilities_from_logits",
    "probe_features",
    "refuse_unfitted",
]

DEFAULT_BATCH_SIZE: Final = 65_536
"""Rows per call into the model runtime."""

FloatArray = NDArray[np.float64]
_Model = TypeVar("_Model", bound="BatchedModel")


def instance_of(obj: object, module: str, *names: str) -> bool:
    """Whether ``obj`` is an instance of one of the classes ``names`` of ``module``, asked
    only when ``module`` is imported already (an object of it exists only then)."""
    imported = sys.modules.get(module)
    kinds = tuple(getattr(imported, name, None) for name in names)
    return any(isinstance(obj, kind) for kind in kinds if isinstance(kind, type))


def object_source(obj: object) -> Path:
    """How a model's messages name a model object: ``the in-memory TYPE`` (no file)."""
    return Path(f"the in-memory {type_name(obj)}")


def refuse_unfitted(obj: object, fitted: bool) -> None:
    """Refuse a model object that is not fitted, naming its type."""
    if not fitted:
        raise InvalidInputError(
            f"the model must be fitted before it is audited; call fit first. Found an "
            f"unfitted {type_name(obj)}."
        )


def in_memory(model: _Model, identity: ObjectIdentity) -> _Model:
    """``model``, loaded from an object, marked with the object's identity."""
    model.identity = identity
    return model


def check_outputs_argument(outputs: object) -> OutputKind | None:
    """``outputs`` of ``ModelLoader.load``: None or one of :data:`OUTPUT_KINDS`."""
    if outputs is None:
        return None
    if outputs not in OUTPUT_KINDS:
        raise InvalidInputError(
            f"outputs must be None, {OUTPUT_KINDS.alternatives()}. Found {outputs!r}."
        )
    return OUTPUT_KINDS.check(outputs)


def first_line(error: BaseException) -> str:
    """The first line of an error's message, at most 200 characters (for one-line errors)."""
    return (str(error).strip().splitlines() or [""])[0][:200]


def probabilities_from_logits(logits: NDArray[Any]) -> FloatArray:
    """Class probabilities from logits: softmax over rows of class scores, sigmoid of a
    binary model's log-odds (one value per record)."""
    from scipy.special import expit, softmax

    values = np.asarray(logits, dtype=np.float64)
    return softmax(values, axis=1) if values.ndim == 2 else expit(values)


def looks_like_probabilities(values: NDArray[Any]) -> bool:
    """The detection rule: all values in [0, 1] and, with ≥ 2 columns, rows summing to 1."""
    return detect_reading(values, "the outputs").kind == "probabilities"


def probe_features(width: int, dtype: DTypeLike = np.float64) -> NDArray[Any]:
    """The fixed probe the detection rule is applied to: 49 rows of ``width`` features.

    A row of zeros, then 16 standard-normal rows (seed 0) at scales 1, 10 and 100; for
    integer or boolean inputs, 49 rows of 0/1 values instead.
    """
    rng = np.random.default_rng(0)
    kind = np.dtype(dtype).kind
    if kind in "biu":
        return rng.integers(0, 2, size=(49, width)).astype(dtype)
    base = rng.standard_normal((16, width))
    rows = np.concatenate([np.zeros((1, width)), base, 10.0 * base, 100.0 * base])
    return rows.astype(dtype)


def _within(array: NDArray[Any], low: float, high: float) -> bool:
    """Whether every value of ``array`` lies in [low, high] (False if any is NaN): two
    reductions, no temporary array, so the common case costs a fraction of a full check."""
    smallest, largest = float(array.min()), float(array.max())
    return low <= smallest and largest <= high


class BatchedModel:
    """A :class:`~epsstar.audit.model.plugins.LoadedModel` built from a function on one batch.

    Subclasses set their own state first, then call ``super().__init__`` (which may run
    the detection probe), and implement :meth:`_run_batch` (features already checked and
    cast to ``input_dtype``, at most ``batch_size`` rows; returns the raw output, 1-D or
    ``(rows, K)``). :meth:`predict` checks the features, runs the chunks, checks one
    prediction per row, flattens a single column, detects or applies the output kind,
    and with ``binary_columns=True`` turns two class columns into one value per record:
    ``P(classes[1])`` for probabilities, ``z_1 − z_0`` for logits.
    """

    identity: ObjectIdentity | None = None
    """What the model object is, for a model loaded from one (:func:`in_memory`)."""

    accepts_features = True
    """:meth:`predict` takes :class:`~epsstar.audit.model.features.Features` (typed, named
    columns)."""

    @property
    def takes_text(self) -> bool:
        """Whether the model takes text columns (a pipeline that encodes categories itself);
        when false the audit refuses text in the data, naming the file, row and value."""
        return False

    @property
    def accepts_missing(self) -> bool:
        """Whether the model takes missing values (NaN) and handles them itself; when false
        the audit refuses NaN in the data, naming the file, row and column."""
        return False

    def __init__(
        self,
        source: Path,
        *,
        n_features: int | None,
        classes: tuple[object, ...] | None,
        outputs: OutputKind | None,
        input_dtype: DTypeLike = np.float64,
        batch_size: int = DEFAULT_BATCH_SIZE,
        binary_columns: bool = False,
        declared_privacy: DeclaredPrivacy | None = None,
    ) -> None:
        self._source = Path(source)
        self._declared_privacy = declared_privacy
        self._n_features = n_features
        self._classes = classes
        self._input_dtype = np.dtype(input_dtype)
        self._batch_size = max(1, int(batch_size))
        self._binary_columns = binary_columns
        self._kind: OutputKind | None = check_outputs_argument(outputs)
        self._reading: OutputReading | None = None
        self._self_checked = False
        if self._kind is None:
            self._reading = self._probe()
            self._kind = None if self._reading is None else self._reading.kind

    # ---------------------------------------------------------------- protocol

    @property
    def source(self) -> Path:
        """The model file."""
        return self._source

    @property
    def n_features(self) -> int | None:
        return self._n_features

    @property
    def classes(self) -> tuple[object, ...] | None:
        return self._classes

    @property
    def input_dtype(self) -> np.dtype[Any] | None:
        """The type the features are cast to (the audit checks every value fits it), or
        ``None`` when the model's inputs have different types, each cast on its own."""
        return self._input_dtype

    @property
    def output_kind(self) -> OutputKind:
        if self._kind is None:
            raise InvalidInputError(
                f"the output kind of {self._source} must be known before it is read; it is "
                f"detected on the first predict() call because the input width is unknown. "
                f"Call predict() first or pass outputs='probabilities' or 'logits'. "
                f"Found no prediction yet."
            )
        return self._kind

    @property
    def output_reading(self) -> OutputReading | None:
        """How the output kind was detected, and why; ``None`` when it was given."""
        return self._reading

    @property
    def feature_names(self) -> tuple[str, ...] | None:
        """The names of the columns the model takes, in order, if the file records them."""
        return None

    @property
    def files(self) -> tuple[Path, ...]:
        """Every file the model is read from: the model file, then any it refers to."""
        return (self._source,)

    @property
    def declared_privacy(self) -> DeclaredPrivacy | None:
        """The DP guarantee the file says the model was trained under, if it says."""
        return self._declared_privacy

    def predict(self, features: Features | NDArray[Any]) -> FloatArray:
        features = as_features(features)
        output = self._run_all(features)
        if self._kind is None:
            self._reading = detect_reading(output, "the first batch of records")
            self._kind = self._reading.kind
        if self._binary_columns and output.ndim == 2 and output.shape[1] == 2:
            # P(classes[1]), or the log-odds z_1 - z_0 of classes[1]
            positive = output[:, 1]
            output = positive if self._kind == "probabilities" else positive - output[:, 0]
        if not self._self_checked:
            self._check_sample(features, output)
        return np.ascontiguousarray(output, dtype=np.float64)

    # ------------------------------------------------------------- for subclasses

    def _run_batch(self, batch: Any) -> NDArray[Any]:
        """The raw output for one prepared chunk (what :meth:`_prepare` returned)."""
        raise NotImplementedError

    def _prepare(self, features: Features) -> Any:
        """The chunk as the runtime takes it; by default a numeric ``(rows, d)`` array of
        :attr:`input_dtype`, its width checked against :attr:`n_features`."""
        return self._matrix(features)

    def _own_predictions(self, sample: Features) -> OwnPredictions | None:
        """The model's library's own predictions for ``sample`` (the first records of the
        first batch), or None when it cannot give them; see :meth:`predict`."""
        return None

    def _probe_features(self) -> Features | None:
        """The records the detection probe runs on (None: detect on the first batch)."""
        if self._n_features is None:
            return None
        return Features.from_matrix(probe_features(self._n_features, self._input_dtype))

    # ------------------------------------------------------------------ internals

    def _run_all(self, features: Features) -> FloatArray:
        size, total = self._batch_size, features.rows
        parts = [
            self._shape(
                self._run_batch(self._prepare(features.slice(start, start + size))),
                min(size, total - start),
            )
            for start in range(0, total, size)
        ]
        return np.concatenate(parts, axis=0) if len(parts) > 1 else parts[0]

    def _check_sample(self, features: Features, output: FloatArray) -> None:
        """Compare the first records' outputs with the library's own, once per model."""
        rows = min(features.rows, SAMPLE_ROWS)
        sample = features.slice(0, rows)
        try:
            own = self._own_predictions(sample)
        except InvalidInputError:
            raise
        except Exception as error:
            raise InvalidInputError(
                f"the model in {self._source} must be scored by its own library on the "
                f"records the audit scores, to check the audit reads it right. Found "
                f"{type(error).__name__}: {first_line(error)}."
            ) from error
        if own is not None:
            check_own_predictions(self._source, output[:rows], self.output_kind, own)
        self._self_checked = True

    def _probe(self) -> OutputReading | None:
        try:
            probe = self._probe_features()
            if probe is None:
                return None
            output = self._run_all(probe)
        except Exception:
            return None  # decided on the first real batch instead
        if not np.all(np.isfinite(output)):
            return None
        return detect_reading(output, "the detection probe")

    def _matrix(self, features: Features) -> NDArray[Any]:
        """A numeric ``(rows, d)`` array cast to :attr:`input_dtype`, width and range checked."""
        if features.is_tensor:
            raise InvalidInputError(
                f"features must be a 2-D array (records × features) for {self._source}. Found "
                f"records of shape {features.record_shape}."
            )
        target = self._input_dtype
        exact = all(np.can_cast(column.dtype, target, "safe") for column in features.columns)
        # Columns that the input type holds exactly are cast to it at once: no float64
        # detour, and nothing to check (no value overflows or wraps, every one is whole).
        array = features.matrix(target if exact else None)
        if self._n_features is not None and array.shape[1] != self._n_features:
            raise InvalidInputError(
                f"features must have {self._n_features} columns, the input width of "
                f"{self._source}. Found {array.shape[1]}."
            )
        if exact:
            return array
        if target.kind in "biu" and array.dtype.kind == "f":
            bad = ~np.isfinite(array) | (array != np.round(array))
            if bad.any():
                row, column = (int(i) for i in np.argwhere(bad)[0])
                raise InvalidInputError(
                    f"features must be whole numbers, as {self._source} takes {target} input; "
                    f"{int(bad.sum())} value(s) are not, the first at row {row}, column "
                    f"{column}. Found {array[row, column]}."
                )
        self._check_range(array)
        return np.ascontiguousarray(array, dtype=target)

    def _check_range(self, array: NDArray[Any]) -> None:
        """Refuse values the cast to the input type would turn into infinity or wrap around."""
        target = self._input_dtype
        narrower = array.dtype.itemsize > target.itemsize
        if target.kind == "f" and array.dtype.kind == "f" and narrower:
            limit = float(np.finfo(target).max)
            if array.size == 0 or _within(array, -limit, limit):
                return
            bad = np.isfinite(array) & (np.abs(array) > limit)
        elif target.kind in "iu" and array.dtype.kind in "iuf":
            if array.dtype.kind in "iu" and np.can_cast(array.dtype, target):
                return
            info = np.iinfo(target)
            wide = np.asarray(array, dtype=np.float64)
            bad = (wide < float(info.min)) | (wide >= float(info.max) + 1.0)
        else:
            return
        if bad.any():
            row, column = (int(i) for i in np.argwhere(bad)[0])
            raise InvalidInputError(
                f"features must fit {target}, the input type of {self._source}; {int(bad.sum())} "
                f"value(s) do not, the first at row {row}, column {column}. "
                f"Found {array[row, column]}."
            )

    def _shape(self, raw: Any, rows: int) -> FloatArray:
        output = np.asarray(raw, dtype=np.float64)
        if output.ndim == 2 and output.shape[1] == 1:
            output = output[:, 0]
        if output.ndim not in (1, 2) or output.shape[0] != rows or output.size == 0:
            raise InvalidInputError(
                f"the model in {self._source} must return one prediction per record, as a "
                f"1-D array or one row of class scores per record. Found shape {output.shape} "
                f"for {rows} records."
            )
        return output
