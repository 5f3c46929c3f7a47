"""scikit-learn classifiers saved with skops (``.skops``) or pickled (``.pkl``, ``.joblib``).

``.skops`` files are read with :mod:`skops.io`, which rebuilds only the types it trusts.
If the file holds other types, the loader refuses it and lists them unless
``trust=True`` (the CLI's ``--trust-model``); with trust, exactly those types are
accepted. Pickle and joblib files run arbitrary code while they are read, so they are
refused unless ``trust=True``: only load them from a source you trust.

Predictions: ``predict_proba`` when the model has it (``"probabilities"``), otherwise
``decision_function`` (``"logits"``); ``outputs=`` picks one explicitly and fails if the
model lacks it. With two classes the loader returns one value per record for
``classes[1]`` (the probability of that class, or the decision function, which
scikit-learn defines as its score); with ``K > 2`` classes an ``(n, K)`` array whose
columns follow :attr:`classes` (``classes_``). Multi-class ``decision_function`` scores
are read as logits, which they are for multinomial models and only approximately for
one-vs-rest ones. :attr:`n_features` is ``n_features_in_``; features are passed as
float64 (as a DataFrame with ``feature_names_in_`` as columns if the model was fitted on
one, in the given column order).
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.plugins import OutputKind, import_optional
from epsstar.exceptions import InputFileError, InvalidInputError

from . import BatchedModel, check_outputs_argument

__all__ = ["SklearnLoader", "SklearnModel"]

_PICKLES = (".pkl", ".pickle", ".joblib")
TRUST_FLAG = "--trust-model"


def _first_line(error: Exception) -> str:
    return (str(error).strip().splitlines() or [""])[0][:200]


def _plain(value: Any) -> object:
    return value.item() if isinstance(value, np.generic) else value


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
        kind: OutputKind = outputs or ("probabilities" if has_proba else "logits")
        self._estimator = estimator
        self._method = estimator.predict_proba if kind == "probabilities" else None
        self._names = getattr(estimator, "feature_names_in_", None)
        classes = getattr(estimator, "classes_", None)
        width = getattr(estimator, "n_features_in_", None)
        super().__init__(
            path,
            n_features=int(width) if width is not None else None,
            classes=None if classes is None else tuple(_plain(c) for c in classes),
            outputs=kind,
            input_dtype=np.float64,
            binary_columns=True,
        )

    def _run_batch(self, batch: NDArray[Any]) -> NDArray[Any]:
        data: Any = batch
        if self._names is not None and len(self._names) == batch.shape[1]:
            import pandas as pd

            data = pd.DataFrame(batch, columns=list(self._names))
        try:
            if self._method is not None:
                return np.asarray(self._method(data))
            return np.asarray(self._estimator.decision_function(data))
        except Exception as error:
            message = (str(error).strip().splitlines() or [""])[0][:200]
            raise InvalidInputError(
                f"the model in {self.source} must accept the features ({batch.shape[0]} × "
                f"{batch.shape[1]} {batch.dtype}). Found {type(error).__name__}: {message}"
            ) from error


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
        return SklearnModel(path, estimator, outputs=outputs)

    def _load_skops(self, path: Path, trust: bool) -> Any:
        sio = import_optional("skops.io", loader=self.name)
        try:
            untrusted = list(sio.get_untrusted_types(file=path))
        except Exception as error:
            raise InputFileError(
                f"the model file must be a valid skops file. Found {path} "
                f"({type(error).__name__}: {_first_line(error)})."
            ) from None
        if untrusted and not trust:
            raise InvalidInputError(
                f"the skops file {path} must hold only types skops trusts, or be loaded with "
                f"trust ({TRUST_FLAG}, trust=True) if you trust its source. Found untrusted "
                f"types: {', '.join(untrusted)}."
            )
        try:
            return sio.load(path, trusted=untrusted)
        except Exception as error:
            raise InputFileError(
                f"the model file must be a valid skops file. Found {path} "
                f"({type(error).__name__}: {_first_line(error)})."
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
                import joblib  # type: ignore[import-untyped]

                return joblib.load(path)
            with path.open("rb") as stream:
                return pickle.load(stream)
        except Exception as error:
            raise InputFileError(
                f"the model file must be a readable {suffix} file. Found {path} "
                f"({type(error).__name__}: {_first_line(error)})."
            ) from None
