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
with ``nan_mode="Forbidden"``. Models with categorical or text features are refused: their
columns would need CatBoost's own hashing of the raw values, which this loader does not
reproduce (export such a model to ONNX, or audit it through a loader plugin that passes
CatBoost a ``Pool``).

Self-check: the first records are scored by ``predict_proba`` too and must agree within
:data:`OWN_TOLERANCE` (the same trees summed by the same library).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.model.features import Features
from epsstar.audit.model.own_predictions import OwnPredictions
from epsstar.audit.model.plugins import OutputKind, import_optional
from epsstar.exceptions import InputFileError, InvalidInputError

from .. import BatchedModel, check_outputs_argument, first_line, probabilities_from_logits

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
        special = list(model.get_cat_feature_indices()) + list(model.get_text_feature_indices())
        if special:
            raise InvalidInputError(
                f"the CatBoost model in {path} must take numeric features only (categorical "
                f"and text features need CatBoost's own hashing); export it with "
                f"save_model(format='onnx') and audit the .onnx file. Found categorical or "
                f"text features at {special[:8]}."
            )
        names = tuple(str(name) for name in model.feature_names_ or ())
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
            self._model.predict_proba(self._matrix(sample), thread_count=1), dtype=np.float64
        )
        return OwnPredictions(
            "CatBoost", "CatBoostClassifier.predict_proba", "probabilities", own, OWN_TOLERANCE
        )


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
