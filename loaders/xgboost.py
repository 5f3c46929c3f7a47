"""XGBoost boosters saved as JSON or UBJSON (``Booster.save_model``, ``XGBClassifier``).

The file is read with ``xgboost.Booster(model_file=...)``, which parses trees and runs
no code, so no trust is needed. ``.json`` is a generic suffix: a ``.json`` file that is
not an XGBoost model (a JSON object with a ``learner`` entry) is refused with
:class:`~epsstar.exceptions.InputFileError`.

Outputs are logits: ``predict(output_margin=True)`` on one thread, which includes the
base score. For ``binary:logistic`` and ``binary:logitraw`` the margin is the log-odds
of class 1; for ``multi:softprob`` and ``multi:softmax`` the ``K`` margins are the softmax
logits. XGBoost sums the trees in float32, so the margins are XGBoost's own values
(exact as XGBoost computes them), cast to float64. Every other objective (regression,
``binary:hinge``, ranking, survival, custom) is refused, naming it: its margin is not a
log-odds. ``outputs="probabilities"`` returns the logistic function or softmax of the
margins, in float64.

Class labels: a model saved from ``XGBClassifier`` may carry the wrapper's attributes in
the ``scikit_learn`` attribute; its ``classes_`` are used when present, else
:attr:`classes` is ``None`` (``0 … K−1``). :attr:`feature_names` are the booster's
(``None`` when it has none). Models with categorical features are refused; numeric
features are passed as float64.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.model.plugins import OutputKind, import_optional
from epsstar.exceptions import InputFileError, InvalidInputError

from . import BatchedModel, check_outputs_argument, first_line, probabilities_from_logits

__all__ = ["XGBoostLoader", "XGBoostModel"]

_CLASSIFIERS: Final = ("binary:logistic", "binary:logitraw", "multi:softprob", "multi:softmax")


def _plain(value: Any) -> object:
    return value.item() if isinstance(value, np.generic) else value


def _sklearn_classes(booster: Any) -> tuple[object, ...] | None:
    """``classes_`` of the ``XGBClassifier`` that saved the model, if it recorded them."""
    text = booster.attr("scikit_learn")
    try:
        attributes = json.loads(text) if text else {}
    except ValueError:
        return None
    classes = attributes.get("classes_") if isinstance(attributes, dict) else None
    if not isinstance(classes, list) or not classes:
        return None
    return tuple(_plain(c) for c in classes)


class XGBoostModel(BatchedModel):
    """An XGBoost classifier booster ready to predict (see the module docstring)."""

    def __init__(self, path: Path, booster: Any, *, outputs: OutputKind | None) -> None:
        config = json.loads(booster.save_config())["learner"]
        objective = str(config["objective"]["name"])
        if objective not in _CLASSIFIERS:
            raise InvalidInputError(
                f"the XGBoost model in {path} must be a classifier (objective "
                f"{', '.join(_CLASSIFIERS)}); retrain it with a classification objective. "
                f"Found objective {objective!r}."
            )
        targets = int(config["learner_model_param"].get("num_target", "1"))
        if targets > 1:
            raise InvalidInputError(
                f"the XGBoost model in {path} must predict one target; multi-target "
                f"(multi-label) models are not supported. Found {targets} targets."
            )
        types = tuple(booster.feature_types or ())
        names = tuple(booster.feature_names or (f"f{i}" for i in range(len(types))))
        if "c" in types:
            raise InvalidInputError(
                f"the XGBoost model in {path} must take numeric features only; models with "
                f"categorical features are not supported, retrain it on numeric (e.g. "
                f"one-hot or ordinal) columns. Found categorical feature(s) "
                f"{', '.join(names[i] for i, kind in enumerate(types) if kind == 'c')}."
            )
        booster.set_param({"nthread": 1})
        self._booster = booster
        self._objective = objective
        self._names = None if booster.feature_names is None else tuple(booster.feature_names)
        self._probabilities = outputs == "probabilities"
        super().__init__(
            path,
            n_features=int(booster.num_features()),
            classes=_sklearn_classes(booster),
            outputs=outputs or "logits",
            input_dtype=np.float64,
        )

    @property
    def feature_names(self) -> tuple[str, ...] | None:
        return self._names

    @property
    def objective(self) -> str:
        """The booster's objective, as XGBoost names it."""
        return self._objective

    def _run_batch(self, batch: NDArray[Any]) -> NDArray[Any]:
        import xgboost

        try:
            matrix = xgboost.DMatrix(batch, feature_names=self._names, nthread=1)
            margins = self._booster.predict(matrix, output_margin=True, validate_features=False)
        except Exception as error:
            raise InvalidInputError(
                f"the XGBoost model in {self.source} must accept the features "
                f"({batch.shape[0]} × {batch.shape[1]}). Found {type(error).__name__}: "
                f"{first_line(error)}."
            ) from error
        logits = np.asarray(margins, dtype=np.float64)
        if not self._probabilities:
            return logits
        return probabilities_from_logits(logits)


class XGBoostLoader:
    """Loads XGBoost model files (``.json``, ``.ubj``)."""

    name = "xgboost"
    suffixes: tuple[str, ...] = (".json", ".ubj")

    def load(
        self, path: Path, *, outputs: OutputKind | None = None, trust: bool = False
    ) -> XGBoostModel:
        """Open ``path``; ``trust`` is not needed (reading a booster runs no code)."""
        outputs = check_outputs_argument(outputs)
        path = Path(path)
        if not path.is_file():
            raise InputFileError(f"the model file must exist. Found no file at {path}.")
        xgboost = import_optional("xgboost", loader=self.name)
        if path.suffix.lower() == ".json":
            _check_json_model(path)
        try:
            booster = xgboost.Booster(params={"nthread": 1}, model_file=str(path))
        except Exception as error:
            raise InputFileError(
                f"the model file must be a readable XGBoost model saved with save_model. "
                f"Found {path} ({type(error).__name__}: {first_line(error)})."
            ) from None
        return XGBoostModel(path, booster, outputs=outputs)


def _check_json_model(path: Path) -> None:
    """Refuse a ``.json`` file that is not an XGBoost model, before XGBoost parses it."""
    try:
        document = json.loads(path.read_bytes())
    except (OSError, ValueError) as error:
        raise InputFileError(
            f"the .json model file must be an XGBoost model saved with save_model. Found "
            f"{path} ({type(error).__name__}: {first_line(error)})."
        ) from None
    if not isinstance(document, dict) or "learner" not in document:
        keys = sorted(document)[:5] if isinstance(document, dict) else type(document).__name__
        raise InputFileError(
            f"the .json model file must be an XGBoost model saved with save_model (a JSON "
            f"object with a 'learner' entry); pass --loader to pick another loader. Found "
            f"{path} with {keys}."
        )
