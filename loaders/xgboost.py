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
(``None`` when it has none).

Trees: a booster trained with early stopping records ``best_iteration``; it is scored with
the trees up to that iteration, as ``XGBClassifier.predict_proba`` scores it (a bare
``Booster.predict`` uses every tree unless given ``iteration_range``).

Inputs: a float64 matrix, missing values (NaN) passed on (XGBoost handles them, so
:attr:`accepts_missing` is true). Categorical features (``enable_categorical``, feature
type ``c``) are read as in :mod:`epsstar.loaders.categories`: a model saved by XGBoost ≥ 3.1
from a DataFrame records its categories, and text (or numbers, for a category of numbers)
is mapped to XGBoost's codes with them; numbers given for a category of text, or for a
model that recorded no categories, are the codes. A category the model was not trained on
is a missing value, as XGBoost scores it when the column holds the training categories (its
``predict`` refuses a ``category`` column whose categories it never saw), and the audit
says how many records held one.

Self-check: the first records of the first batch are scored by ``XGBClassifier`` too,
built from the same booster (``predict_proba``, or ``predict(output_margin=True)`` for
``binary:logitraw``, whose ``predict_proba`` is not a probability), from a DataFrame of
``category`` columns when the model recorded categories, and must agree within
:data:`OWN_TOLERANCE`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.model.features import Features
from epsstar.audit.model.own_predictions import OwnPredictions
from epsstar.audit.model.plugins import ObjectIdentity, OutputKind, import_optional
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.plumbing.files.json_parsing import parse_json

from . import (
    BatchedModel,
    check_outputs_argument,
    first_line,
    in_memory,
    instance_of,
    object_source,
    probabilities_from_logits,
    refuse_unfitted,
)
from .categories import CategoricalReader, Categories

__all__ = ["OWN_TOLERANCE", "XGBoostLoader", "XGBoostModel"]

_CLASSIFIERS: Final = ("binary:logistic", "binary:logitraw", "multi:softprob", "multi:softmax")

OWN_TOLERANCE: Final = 1e-6
"""Largest difference of a probability allowed between the loader and ``XGBClassifier``.

Both start from the same float32 margins; XGBoost applies the logistic function or the
softmax in float32 and rounds the probability to float32 (relative errors of a few times
2**-24 ≈ 6e-8), the loader in float64. 1e-6 is over ten times that; a wrong category, a
tree more or less, or a wrong link moves a probability by more."""


def _plain(value: Any) -> object:
    return value.item() if isinstance(value, np.generic) else value


def _sklearn_classes(booster: Any) -> tuple[object, ...] | None:
    """``classes_`` of the ``XGBClassifier`` that saved the model, if it recorded them."""
    text = booster.attr("scikit_learn")
    try:
        attributes = parse_json(text, "the scikit_learn attribute") if text else {}
    except InputFileError:
        return None
    classes = attributes.get("classes_") if isinstance(attributes, dict) else None
    if not isinstance(classes, list) or not classes:
        return None
    return tuple(_plain(c) for c in classes)


def _recorded_categories(booster: Any, types: tuple[str, ...]) -> dict[int, Categories | None]:
    """Each categorical feature's categories, as XGBoost ≥ 3.1 records them (else None)."""
    found: dict[int, Categories | None] = {i: None for i, kind in enumerate(types) if kind == "c"}
    get_categories = getattr(booster, "get_categories", None)
    if not found or get_categories is None:
        return found
    try:
        recorded = get_categories(export_to_arrow=True)
        pairs = [] if recorded.empty() else recorded.to_arrow()
    except Exception:  # no categories to read: numbers are codes and text is refused
        return found
    for index, (_, values) in enumerate(pairs):
        if index in found and values is not None:
            found[index] = Categories(tuple(values.to_pylist()))
    return found


def _iteration_range(booster: Any, kind: str) -> tuple[int, int]:
    """``(0, best_iteration + 1)`` for an early-stopped tree booster, else every tree
    (``kind`` is the learner's ``gradient_booster`` name)."""
    best = booster.attr("best_iteration")
    if best is None or kind == "gblinear":
        return (0, 0)
    return (0, int(best) + 1)


class XGBoostModel(BatchedModel):
    """An XGBoost classifier booster ready to predict (see the module docstring)."""

    def __init__(self, path: Path, booster: Any, *, outputs: OutputKind | None) -> None:
        learner: Any = parse_json(booster.save_config(), str(path))
        config = learner["learner"]
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
        booster.set_param({"nthread": 1})
        width = int(booster.num_features())
        self._booster = booster
        self._objective = objective
        self._names = None if booster.feature_names is None else tuple(booster.feature_names)
        self._types = None if booster.feature_types is None else tuple(booster.feature_types)
        self._range = _iteration_range(booster, str(config["gradient_booster"]["name"]))
        self._reader = CategoricalReader(
            path,
            "XGBoost",
            self._names or tuple(f"f{i}" for i in range(width)),
            _recorded_categories(booster, self._types or ()),
            why_no_categories=" (trained on codes, or saved by XGBoost before 3.1)",
        )
        self._probabilities = outputs == "probabilities"
        super().__init__(
            path,
            n_features=width,
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

    @property
    def iteration_range(self) -> tuple[int, int]:
        """The boosting rounds scored: up to ``best_iteration`` after early stopping,
        ``(0, 0)`` (every tree) otherwise."""
        return self._range

    @property
    def takes_text(self) -> bool:
        """True when a categorical feature has recorded categories to read text as."""
        return self._reader.takes_text

    @property
    def accepts_missing(self) -> bool:
        """XGBoost handles missing values (NaN) itself."""
        return True

    @property
    def input_notes(self) -> tuple[str, ...]:
        """How many records read so far held a category the model never saw."""
        return self._reader.notes()

    def _prepare(self, features: Features) -> Any:
        return self._reader.matrix(features)

    def _run_batch(self, batch: NDArray[Any]) -> NDArray[Any]:
        import xgboost

        try:
            matrix = xgboost.DMatrix(
                batch,
                feature_names=self._names,
                feature_types=self._types,
                enable_categorical=bool(self._reader.categorical),
                nthread=1,
            )
            margins = self._booster.predict(
                matrix, output_margin=True, iteration_range=self._range, validate_features=False
            )
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

    def _own_predictions(self, sample: Features) -> OwnPredictions:
        """``XGBClassifier`` on the same booster: ``predict_proba``, or the margins of
        ``predict`` for ``binary:logitraw``; from a DataFrame of ``category`` columns when
        the model recorded categories."""
        import xgboost

        classifier = xgboost.XGBClassifier(n_jobs=1)
        classifier.load_model(bytearray(self._booster.save_raw()))
        classifier.set_params(n_jobs=1, enable_categorical=bool(self._reader.categorical))
        matrix = self._reader.matrix(sample, counted=False)
        frame = self._reader.frame(sample, matrix)
        data = matrix if frame is None else frame
        if self._objective == "binary:logitraw":
            margins = classifier.predict(data, output_margin=True)
            return OwnPredictions(
                "XGBoost", "XGBClassifier.predict", "logits", margins, OWN_TOLERANCE
            )
        probabilities = classifier.predict_proba(data)
        return OwnPredictions(
            "XGBoost", "XGBClassifier.predict_proba", "probabilities", probabilities, OWN_TOLERANCE
        )


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

    def claims_object(self, obj: object) -> bool:
        """An XGBoost ``Booster`` or scikit-learn wrapper (``XGBClassifier``)."""
        return instance_of(obj, "xgboost", "Booster", "XGBModel")

    def load_object(self, obj: Any, *, outputs: OutputKind | None = None) -> XGBoostModel:
        """The booster of ``obj`` read back from its UBJSON serialisation (``save_raw``), the
        bytes a ``.ubj`` file holds, hashed by them."""
        outputs = check_outputs_argument(outputs)
        xgboost = import_optional("xgboost", loader=self.name)
        booster: Any = obj if isinstance(obj, xgboost.Booster) else getattr(obj, "_Booster", None)
        refuse_unfitted(obj, booster is not None)
        raw = bytes(booster.save_raw("ubj"))
        identity = ObjectIdentity.of(obj, "its save_raw('ubj')", lambda: raw)
        copy = xgboost.Booster(params={"nthread": 1}, model_file=bytearray(raw))
        return in_memory(XGBoostModel(object_source(obj), copy, outputs=outputs), identity)


def _check_json_model(path: Path) -> None:
    """Refuse a ``.json`` file that is not an XGBoost model, before XGBoost parses it."""
    try:
        document = parse_json(path.read_bytes().decode("utf-8"), str(path))
    except (OSError, ValueError) as error:  # InputFileError among them
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
