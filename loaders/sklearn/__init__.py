"""scikit-learn classifiers saved with skops (``.skops``) or pickled (``.pkl``, ``.joblib``).

``.skops`` files are read with :mod:`skops.io`, which rebuilds only the types it trusts,
and the scikit-learn types reviewed in :mod:`epsstar.loaders.sklearn.skops_types.reviewed`
(HistGradientBoosting's trees, CalibratedClassifierCV's calibrators, MLPClassifier's
optimiser state, ...), whose trees are bounds-checked before they run
(:mod:`epsstar.loaders.sklearn.skops_types.tree_bounds`). If the file holds other types, the
loader refuses it and lists them unless ``trust=True`` (the CLI's ``--trust-model``);
with trust, exactly those types are accepted. Pickle and joblib files run arbitrary code
while they are read, so they are refused unless ``trust=True``: only load them from a
source you trust.

Outputs, decided once, on the first batch of records (unless ``outputs=`` says), so that
the losses are exact wherever the model can give them (:mod:`epsstar.statistics.losses`
computes them exactly from logits, and clips probabilities to ``[ε, 1 − ε]``):

1. ``decision_function``, read as logits, when the softmax of its scores (the sigmoid of
   its one score, with two classes) reproduces ``predict_proba`` on that batch within a
   relative 1e-9 (absolute 1e-15, the rounding of ``1 − p``): logistic regression,
   multinomial or binary, ``SGDClassifier(loss="log_loss")``, pipelines ending in them;
2. else ``predict_log_proba``, read as logits (log-probabilities are logits), when it is
   finite, reproduces ``predict_proba`` the same way, and differs from
   ``log(predict_proba)`` somewhere (it is computed more accurately than the log of the
   rounded probabilities, otherwise it brings nothing);
3. else ``predict_proba``, read as probabilities; a model without it gives
   ``decision_function`` as logits.

``outputs="probabilities"`` forces ``predict_proba``, ``outputs="logits"`` forces
``decision_function``; either fails if the model lacks the method. The choice and its
reason are kept in :attr:`output_reading`. With two classes the loader returns one value
per record for ``classes[1]`` (its probability, or its log-odds); with ``K > 2`` classes
an ``(n, K)`` array whose columns follow :attr:`classes` (``classes_``).

Inputs: a model fitted on a DataFrame (``feature_names_in_``, which become
:attr:`feature_names`) receives ``Features.frame()`` with those column names and the
column types of the data kept (text columns stay text, so a ``ColumnTransformer`` with a
``OneHotEncoder`` runs on raw data). Features named with those names are put in the
model's order; features with other names (``x0, x1, …`` from a bare array) are taken by
position. A model without names receives the float64 ``(rows, d)`` matrix of numeric
features, or the frame if some are text.
:attr:`n_features` is ``n_features_in_``. Missing values (NaN) reach the model only when
it declares that it handles them (scikit-learn's ``allow_nan`` tag: histogram gradient
boosting, trees and forests; :attr:`accepts_missing`), or, for a pipeline, when every
column's missing values meet an imputer (or a one-hot encoder, or an estimator with the tag)
through steps that pass NaN on (a ``ColumnTransformer``'s transformers, scalers).

Self-check: when the loader chose ``decision_function`` or ``predict_log_proba``, the first
records of the first batch are also scored by ``predict_proba``, and the probabilities the
outputs stand for must agree within :data:`OWN_TOLERANCE`.

Determinism: every ``n_jobs`` parameter of the estimator and of the estimators nested in
it is set to 1 on loading, since parallel prediction (a random forest's trees summed by
several threads) adds floating-point numbers in a varying order and changes the last bits
of the losses from one run to the next.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final, TypeVar

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.model.features import Features, as_features
from epsstar.audit.model.output_reading import OutputReading
from epsstar.audit.model.own_predictions import OwnPredictions
from epsstar.audit.model.plugins import ObjectIdentity, OutputKind, import_optional
from epsstar.exceptions import InputFileError, InvalidInputError

from .. import (
    BatchedModel,
    check_outputs_argument,
    first_line,
    in_memory,
    instance_of,
    object_source,
    refuse_unfitted,
)
from .outputs import RELATIVE_TOLERANCE, Method, choose_method
from .skops_types.reviewed import REVIEWED_TYPES
from .skops_types.tree_bounds import check_tree_bounds

__all__ = ["OWN_TOLERANCE", "SklearnLoader", "SklearnModel"]

OWN_TOLERANCE: Final = 2 * RELATIVE_TOLERANCE
"""Largest difference of a probability allowed between the loader's outputs and
``predict_proba``: the method was chosen because it reproduces ``predict_proba`` within a
relative :data:`~epsstar.loaders.sklearn.outputs.RELATIVE_TOLERANCE` (and 1e-15) on the
first batch (:mod:`epsstar.loaders.sklearn.outputs`), and a probability is at most 1."""

_PICKLES = (".pkl", ".pickle", ".joblib")
TRUST_FLAG = "--trust-model"
_T = TypeVar("_T")


def _plain(value: Any) -> object:
    return value.item() if isinstance(value, np.generic) else value


def _single_threaded(estimator: Any) -> None:
    """Set every ``n_jobs`` parameter, the estimator's and its nested ones', to 1."""
    get_params = getattr(estimator, "get_params", None)
    if get_params is None:
        return
    keys = [key for key in get_params(deep=True) if key == "n_jobs" or key.endswith("__n_jobs")]
    if keys:
        estimator.set_params(**dict.fromkeys(keys, 1))


def _allows_nan(estimator: Any) -> bool:
    """Whether ``estimator`` handles missing values itself: scikit-learn's ``allow_nan``
    tag; for a pipeline, whether every column's missing values meet a step that removes them
    (an imputer, a one-hot encoder) or an estimator with the tag, having passed only through
    steps with the tag (a scaler passes NaN on)."""
    return _takes_nan(estimator, ())


def _takes_nan(step: Any, after: tuple[Any, ...]) -> bool:
    """Whether NaN in the columns ``step`` receives are handled by it or, when it passes
    them on, by the steps ``after`` it."""
    try:
        from sklearn.compose import ColumnTransformer
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import FunctionTransformer, OneHotEncoder
    except ImportError:  # pragma: no cover - the loader needs scikit-learn
        return False
    if step == "passthrough" or (isinstance(step, FunctionTransformer) and step.func is None):
        return bool(after) and _takes_nan(after[0], after[1:])
    if isinstance(step, Pipeline):
        steps = tuple(s for _, s in step.steps if s is not None and s != "passthrough")
        return bool(steps) and _takes_nan(steps[0], steps[1:] + after)
    if isinstance(step, ColumnTransformer) and hasattr(step, "transformers_"):
        return all(
            _takes_nan(transformer, after)
            for _, transformer, columns in step.transformers_
            if transformer != "drop" and _selects_some(columns)
        )
    if not _tag_allows_nan(step):
        return False
    removes = isinstance(step, OneHotEncoder) or type(step).__module__.startswith("sklearn.impute")
    return removes or not after or _takes_nan(after[0], after[1:])


def _selects_some(columns: Any) -> bool:
    """Whether a ``ColumnTransformer`` column selection names at least one column."""
    try:
        return len(columns) > 0
    except TypeError:  # a single column given by name or index
        return True


def _tag_allows_nan(estimator: Any) -> bool:
    """scikit-learn's ``allow_nan`` tag: the estimator handles missing values itself."""
    try:
        from sklearn.utils import get_tags
    except ImportError:  # scikit-learn < 1.6 keeps the tags in a private dictionary
        tags = getattr(estimator, "_get_tags", None)
        return bool(tags is not None and tags().get("allow_nan", False))
    try:
        return bool(get_tags(estimator).input_tags.allow_nan)
    except Exception:  # not a scikit-learn estimator: NaN stays refused
        return False


def _forced(name: str, kind: OutputKind) -> Method:
    return Method(name, kind, OutputReading(kind, "requested", f"{name}, as requested"))


class SklearnModel(BatchedModel):
    """A fitted scikit-learn classifier ready to predict (see the module docstring)."""

    def __init__(self, path: Path, estimator: Any, *, outputs: OutputKind | None) -> None:
        has_proba = hasattr(estimator, "predict_proba")
        has_decision = hasattr(estimator, "decision_function")
        name = type(estimator).__name__
        if outputs == "probabilities" and not has_proba:
            raise InvalidInputError(
                f"outputs='probabilities' needs a model with predict_proba. Found {name} in "
                f"{path} without it."
            )
        if outputs == "logits" and not has_decision:
            raise InvalidInputError(
                f"outputs='logits' needs a model with decision_function. Found {name} in "
                f"{path} without it."
            )
        if not (has_proba or has_decision):
            raise InvalidInputError(
                f"the model must be a classifier with predict_proba or decision_function. "
                f"Found {name} in {path}."
            )
        _single_threaded(estimator)
        self._estimator = estimator
        self._allows_nan = _allows_nan(estimator)
        self._method: Method | None = None
        if outputs is not None:
            name = "predict_proba" if outputs == "probabilities" else "decision_function"
            self._method = _forced(name, outputs)
        elif not has_proba:
            self._method = Method(
                "decision_function",
                "logits",
                OutputReading("logits", "loader", "the model has no predict_proba"),
            )
        names = getattr(estimator, "feature_names_in_", None)
        self._names = None if names is None else tuple(str(n) for n in names)
        classes = getattr(estimator, "classes_", None)
        width = getattr(estimator, "n_features_in_", None)
        super().__init__(
            path,
            n_features=int(width) if width is not None else None,
            classes=None if classes is None else tuple(_plain(c) for c in classes),
            outputs=None if self._method is None else self._method.kind,
            input_dtype=np.float64,
            binary_columns=True,
        )
        if self._method is not None:
            self._reading = self._method.reading

    @property
    def feature_names(self) -> tuple[str, ...] | None:
        """``feature_names_in_``: the DataFrame columns the model was fitted on."""
        return self._names

    @property
    def takes_text(self) -> bool:
        """A model fitted on a DataFrame may encode text columns itself (a pipeline)."""
        return self._names is not None

    @property
    def accepts_missing(self) -> bool:
        """Whether the estimator handles NaN itself (the ``allow_nan`` tag, through a pipeline)."""
        return self._allows_nan

    def predict(self, features: Features | NDArray[Any]) -> NDArray[np.float64]:
        features = as_features(features)
        if self._method is None:
            first = self._prepare(features.slice(0, min(features.rows, self._batch_size)))
            self._method = self._guarded(lambda: choose_method(self._estimator, first), first)
            self._kind, self._reading = self._method.kind, self._method.reading
        return super().predict(features)

    def _probe_features(self) -> Features | None:
        return None  # the method is chosen on the first batch of real records

    def _own_predictions(self, sample: Features) -> OwnPredictions | None:
        """``predict_proba`` on the sample, when the loader reads another method."""
        method = self._method
        if (
            method is None
            or method.name == "predict_proba"
            or method.reading.source != "loader"
            or not hasattr(self._estimator, "predict_proba")
        ):
            return None  # nothing else to compare with, or the caller chose the method
        batch = self._prepare(sample)
        own = self._guarded(lambda: np.asarray(self._estimator.predict_proba(batch)), batch)
        return OwnPredictions("scikit-learn", "predict_proba", "probabilities", own, OWN_TOLERANCE)

    def _prepare(self, features: Features) -> Any:
        """A DataFrame (types kept) for a model with names or text input, else the matrix."""
        if self._names is None and features.is_numeric and not features.is_tensor:
            return self._matrix(features)
        if features.is_tensor or (
            self._n_features is not None and features.width != self._n_features
        ):
            return self._matrix(features)  # refuses, naming the shape or the width
        if self._names is not None and features.names != self._names:
            if set(features.names) == set(self._names):  # the model's columns, in its order
                features = Features(
                    self._names, tuple(features.column(name) for name in self._names)
                )
            else:  # unnamed (x0, x1, ...) or other names: by position, as the caller gave them
                features = features.rename(self._names)
        return features.frame()

    def _run_batch(self, batch: Any) -> NDArray[Any]:
        assert self._method is not None  # chosen before the first batch runs
        method = getattr(self._estimator, self._method.name)
        return self._guarded(lambda: np.asarray(method(batch)), batch)

    def _guarded(self, call: Callable[[], _T], batch: Any) -> _T:
        try:
            return call()
        except InvalidInputError:
            raise
        except Exception as error:
            rows, width = batch.shape
            text_column = _numbers_for_text(self._estimator, batch)
            if text_column is not None:
                name, category, found = text_column
                raise InvalidInputError(
                    f"the model in {self.source} must receive text in column {name!r}: its "
                    f"encoder was fitted on strings such as {category!r}, and the data hold "
                    f"numbers there (write the categories as the model saw them). "
                    f"Found {found!r} in {name!r}."
                ) from error
            raise InvalidInputError(
                f"the model in {self.source} must accept the features ({rows} × {width}, "
                f"columns {_describe_types(batch)}). Found {type(error).__name__}: "
                f"{first_line(error)}"
            ) from error


def _encoders(estimator: Any) -> Iterator[Any]:
    """Every fitted step of ``estimator`` that encodes categories (``categories_``), through
    pipelines and column transformers."""
    if hasattr(estimator, "categories_") and hasattr(estimator, "feature_names_in_"):
        yield estimator
    for step in getattr(estimator, "steps", ()):
        yield from _encoders(step[1])
    for transformer in getattr(estimator, "transformers_", ()):
        yield from _encoders(transformer[1])


def _numbers_for_text(estimator: Any, batch: Any) -> tuple[str, str, object] | None:
    """The first column of ``batch`` (a frame) that holds numbers where an encoder of the
    model was fitted on strings: its name, a category, a value found; None if there is none."""
    columns = getattr(batch, "columns", None)
    if columns is None:
        return None
    for encoder in _encoders(estimator):
        for name, categories in zip(encoder.feature_names_in_, encoder.categories_, strict=False):
            texts = [value for value in categories if isinstance(value, str)]
            if not texts or name not in columns:
                continue
            values = batch[name]
            if np.issubdtype(values.dtype, np.number) and len(values):
                return str(name), texts[0], values.iloc[0].item()
    return None


def _describe_types(batch: Any) -> str:
    dtypes = getattr(batch, "dtypes", None)
    if dtypes is None:
        return str(batch.dtype)
    return ", ".join(sorted({str(dtype) for dtype in dtypes}))


#: The packages whose scikit-learn wrappers another loader takes as objects.
_OWN_LOADERS: Final = frozenset({"lightgbm", "xgboost", "catboost"})


class SklearnLoader:
    """Loads scikit-learn models from ``.skops`` (safe) or pickle/joblib (``trust=True``)."""

    name = "sklearn"
    suffixes: tuple[str, ...] = (".skops", *_PICKLES)

    def load(
        self, path: Path, *, outputs: OutputKind | None = None, trust: bool = False
    ) -> SklearnModel:
        """Open ``path``; see the module docstring for what ``trust`` allows."""
        outputs = check_outputs_argument(outputs)
        path = Path(path)
        if not path.is_file():
            raise InputFileError(f"the model file must exist. Found no file at {path}.")
        suffix = path.suffix.lower()
        if suffix in _PICKLES:
            estimator = self._unpickle(path, suffix, trust)
        else:
            estimator = self._load_skops(path, trust)
            check_tree_bounds(estimator, path)
        return SklearnModel(path, estimator, outputs=outputs)

    def claims_object(self, obj: object) -> bool:
        """A scikit-learn estimator or pipeline, except the scikit-learn wrappers of the
        boosting libraries, which their own loaders take."""
        own = type(obj).__module__.split(".")[0]
        return instance_of(obj, "sklearn.base", "BaseEstimator") and own not in _OWN_LOADERS

    def load_object(self, obj: Any, *, outputs: OutputKind | None = None) -> SklearnModel:
        """The fitted estimator ``obj`` (a copy: the audit sets its threads), hashed by its
        pickle."""
        outputs = check_outputs_argument(outputs)
        from sklearn.exceptions import NotFittedError
        from sklearn.utils.validation import check_is_fitted

        try:
            check_is_fitted(obj)
            fitted = True
        except NotFittedError:
            fitted = False
        refuse_unfitted(obj, fitted)
        identity = ObjectIdentity.of(obj, "its pickle", lambda: pickle.dumps(obj, protocol=5))
        model = SklearnModel(object_source(obj), copy.deepcopy(obj), outputs=outputs)
        return in_memory(model, identity)

    def _load_skops(self, path: Path, trust: bool) -> Any:
        sio = import_optional("skops.io", loader=self.name)
        try:
            untrusted = list(sio.get_untrusted_types(file=path))
        except Exception as error:
            raise InputFileError(
                f"the model file must be a valid skops file. Found {path} "
                f"({type(error).__name__}: {first_line(error)})."
            ) from None
        unknown = [name for name in untrusted if name not in REVIEWED_TYPES]
        if unknown and not trust:
            raise InvalidInputError(
                f"the skops file {path} must hold only types skops trusts or epsstar has "
                f"reviewed, or be loaded with trust ({TRUST_FLAG}, trust=True) if you trust "
                f"its source. Found untrusted types: {', '.join(unknown)}."
            )
        try:
            return sio.load(path, trusted=untrusted)
        except Exception as error:
            raise InputFileError(
                f"the model file must be a valid skops file. Found {path} "
                f"({type(error).__name__}: {first_line(error)})."
            ) from None

    def _unpickle(self, path: Path, suffix: str, trust: bool) -> Any:
        if not trust:
            raise InvalidInputError(
                f"{suffix} files run arbitrary code when loaded; load them only with trust "
                f"({TRUST_FLAG}, trust=True) and from a source you trust, or save the model "
                f"with skops. Found {path}."
            )
        try:
            if suffix == ".joblib":
                import joblib

                return joblib.load(path)
            with path.open("rb") as stream:
                return pickle.load(stream)
        except Exception as error:
            raise InputFileError(
                f"the model file must be a readable {suffix} file. Found {path} "
                f"({type(error).__name__}: {first_line(error)})."
            ) from None
