"""CatBoost classifiers saved in CatBoost's binary format (``save_model``, ``.cbm``).

The file is read with ``CatBoostClassifier().load_model(path)``, which parses the trees
(a FlatBuffers document) and runs no code, so no trust is needed.

Outputs are exact logits in float64, from ``predict(prediction_type="RawFormulaVal")`` on
one thread: with ``Logloss`` or ``CrossEntropy`` the raw value is the log-odds of the
second class, ``P(1) = 1 / (1 + exp(−s))``; with ``MultiClass`` the ``K`` raw values are the
softmax logits. Other loss functions (regression, ranking, ``MultiClassOneVsAll``) are
refused. ``outputs="probabilities"`` returns the logistic function (softmax) of those
logits. :attr:`classes` are the model's ``classes_``; :attr:`feature_names` are its
``feature_names_`` unless they are CatBoost's defaults ``0, 1, …`` (a model fitted on an
array).

Inputs: a float64 matrix; missing values (NaN) are passed on unless the model was trained
with ``nan_mode="Forbidden"``. A model trained with categorical features (``cat_features``)
gets a DataFrame in which those columns hold the categories as text, and CatBoost hashes
them itself, as its own ``predict`` does: text stays as it is and whole numbers become their
integer text (``3`` and ``3.0`` become ``"3"``, which is how CatBoost reads an integer
category; it refuses a real number or NaN as a category, and so does this loader, in one
line). Numeric text such as ``"03"`` is read by the table reader as the number 3, so store
such categories as text that is not a number. CatBoost cannot export a model with
categorical features to ONNX (``save_model(format="onnx")`` refuses it), so such a model has
no ONNX twin to compare with. Models with text or embedding features are refused.

Self-check: the first records are scored by ``predict_proba`` too and must agree within
:data:`OWN_TOLERANCE` (the same trees summed by the same library).
"""

from __future__ import annotations

import math
import re
import tempfile
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.model.features import Features
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
    probabilities_from_logits,
    refuse_unfitted,
)

__all__ = ["OWN_TOLERANCE", "CatBoostLoader", "CatBoostModel"]

_BINARY: Final = ("Logloss", "CrossEntropy")
_MULTICLASS: Final = ("MultiClass",)
_DEFAULT_NAME: Final = re.compile(r"\d+")
#: predict_proba and the raw values' logistic function: one float64 sum of the same trees.
OWN_TOLERANCE: Final = 1e-9


def _loss_name(params: dict[str, Any]) -> str:
    return str(params.get("loss_function", "")).split(":", 1)[0]


class CatBoostModel(BatchedModel):
    """A CatBoost classifier ready to predict (see the module docstring)."""

    def __init__(self, path: Path, model: Any, *, outputs: OutputKind | None) -> None:
        params = model.get_all_params()
        loss = _loss_name(params)
        if loss not in _BINARY + _MULTICLASS:
            raise InvalidInputError(
                f"the CatBoost model in {path} must be a classifier (loss_function Logloss, "
                f"CrossEntropy or MultiClass); retrain it with one. Found {loss or 'none'!r}."
            )
        special = list(model.get_text_feature_indices())
        special += list(getattr(model, "get_embedding_feature_indices", list)())
        if special:
            raise InvalidInputError(
                f"the CatBoost model in {path} must take numeric and categorical features "
                f"only (text and embedding features are not read). Found text or embedding "
                f"features at {special[:8]}."
            )
        self._categorical = tuple(int(i) for i in model.get_cat_feature_indices())
        names = tuple(str(name) for name in model.feature_names_ or ())
        self._all_names = names
        self._names = None if all(_DEFAULT_NAME.fullmatch(n) for n in names) else names
        self._model = model
        self._missing = str(params.get("nan_mode", "Min")) != "Forbidden"
        self._probabilities = outputs == "probabilities"
        classes = tuple(np.asarray(model.classes_).tolist())
        super().__init__(
            path,
            n_features=len(names),
            classes=classes,
            outputs=outputs or "logits",
            input_dtype=np.float64,
        )

    @property
    def feature_names(self) -> tuple[str, ...] | None:
        return self._names

    @property
    def accepts_missing(self) -> bool:
        """CatBoost handles NaN itself unless trained with ``nan_mode="Forbidden"``."""
        return self._missing

    @property
    def takes_text(self) -> bool:
        """A model with categorical features takes them as text."""
        return bool(self._categorical)

    def _prepare(self, features: Features) -> Any:
        """The float64 matrix, or with categorical features the DataFrame of numbers and
        category texts CatBoost's own ``predict`` takes."""
        if not self._categorical:
            return self._matrix(features)
        import pandas as pd

        if features.is_tensor or features.width != len(self._all_names):
            return self._matrix(features)  # refuses, naming the shape or the width
        columns: dict[str, Any] = {}
        for index, name in enumerate(self._all_names):
            values = features.columns[index]
            given = features.names[index]
            if index in self._categorical:
                columns[name] = category_texts(values, given, self.source)
            else:
                columns[name] = numeric_values(values, given, self.source)
        return pd.DataFrame(columns)

    def _run_batch(self, batch: NDArray[Any]) -> NDArray[Any]:
        try:
            logits = np.asarray(
                self._model.predict(batch, prediction_type="RawFormulaVal", thread_count=1),
                dtype=np.float64,
            )
        except Exception as error:
            raise InvalidInputError(
                f"the CatBoost model in {self.source} must accept the features "
                f"({len(batch)} records). Found {type(error).__name__}: {first_line(error)}."
            ) from error
        return probabilities_from_logits(logits) if self._probabilities else logits

    def _own_predictions(self, sample: Features) -> OwnPredictions:
        """``predict_proba`` on the sample (all classes' columns)."""
        own = np.asarray(
            self._model.predict_proba(self._prepare(sample), thread_count=1), dtype=np.float64
        )
        return OwnPredictions(
            "CatBoost", "CatBoostClassifier.predict_proba", "probabilities", own, OWN_TOLERANCE
        )


def category_texts(values: NDArray[Any], name: str, source: Path) -> NDArray[np.object_]:
    """A categorical column as CatBoost reads categories: text as is, whole numbers as
    their integer text; a missing value or a real number is refused."""
    texts = np.empty(len(values), dtype=object)
    for row, value in enumerate(values.tolist()):
        if isinstance(value, str):
            texts[row] = value
            continue
        number = float(value) if isinstance(value, (int, float)) else math.nan
        if not math.isfinite(number) or number != round(number):
            what = "a missing value" if value is None or number != number else repr(value)
            raise InvalidInputError(
                f"categorical feature {name!r} of {source} must hold text or whole numbers in "
                f"every record, as CatBoost reads categories. Found {what} at row {row} of "
                f"the batch."
            )
        texts[row] = str(int(number))
    return texts


def numeric_values(values: NDArray[Any], name: str, source: Path) -> NDArray[np.float64]:
    """A numeric feature's column as float64 (NaN passed on); text is refused."""
    if values.dtype.kind in "biuf":
        return values.astype(np.float64)
    for row, value in enumerate(values.tolist()):
        if isinstance(value, str):
            raise InvalidInputError(
                f"feature {name!r} of {source} must be numeric (the model was not trained with "
                f"it as a categorical feature). Found {value!r} at row {row} of the batch."
            )
    return np.array([math.nan if v is None else v for v in values.tolist()], dtype=np.float64)


class CatBoostLoader:
    """Loads CatBoost binary model files (``.cbm``)."""

    name = "catboost"
    suffixes: tuple[str, ...] = (".cbm",)

    def load(
        self, path: Path, *, outputs: OutputKind | None = None, trust: bool = False
    ) -> CatBoostModel:
        """Open ``path``; ``trust`` is not needed (reading the trees runs no code)."""
        outputs = check_outputs_argument(outputs)
        path = Path(path)
        if not path.is_file():
            raise InputFileError(f"the model file must exist. Found no file at {path}.")
        catboost = import_optional("catboost", loader=self.name)
        model = catboost.CatBoostClassifier()
        try:
            model.load_model(str(path), format="cbm")
        except Exception as error:
            raise InputFileError(
                f"the .cbm model file must be a CatBoost model saved with save_model. Found "
                f"{path} ({type(error).__name__}: {first_line(error)})."
            ) from None
        return CatBoostModel(path, model, outputs=outputs)

    def claims_object(self, obj: object) -> bool:
        """A CatBoost model (``CatBoostClassifier``)."""
        return instance_of(obj, "catboost", "CatBoost")

    def load_object(self, obj: Any, *, outputs: OutputKind | None = None) -> CatBoostModel:
        """The model ``obj`` read back from the ``.cbm`` bytes ``save_model`` writes, hashed
        by them."""
        outputs = check_outputs_argument(outputs)
        catboost = import_optional("catboost", loader=self.name)
        refuse_unfitted(obj, bool(obj.is_fitted()))
        with tempfile.TemporaryDirectory(prefix="epsstar-catboost-") as folder:
            file = Path(folder) / "model.cbm"
            obj.save_model(str(file), format="cbm")
            raw = file.read_bytes()
            copy = catboost.CatBoostClassifier()
            copy.load_model(str(file), format="cbm")
        identity = ObjectIdentity.of(obj, "its .cbm serialisation", lambda: raw)
        return in_memory(CatBoostModel(object_source(obj), copy, outputs=outputs), identity)
