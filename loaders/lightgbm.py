"""LightGBM boosters saved as text (``Booster.save_model``, ``LGBMClassifier.booster_``).

The file is read with ``lightgbm.Booster(model_str=...)``, which parses trees and runs no
code, so no trust is needed. ``.txt`` is a generic suffix: a ``.txt`` file that is not a
LightGBM model (it must start with ``tree`` and hold the ``end of trees`` marker) is
refused with :class:`~epsstar.exceptions.InputFileError`.

Outputs are exact logits in float64, from ``predict(raw_score=True)`` on one thread:

* ``binary`` and ``cross_entropy``: the raw score ``s`` is the log-odds of class 1
  (times the file's ``sigmoid`` parameter σ, since ``P(1) = 1 / (1 + exp(−σ s))``);
* ``multiclass`` (softmax): the ``K`` raw scores are the logits;
* ``multiclassova``: the ``K`` raw scores are one-vs-rest log-odds, not softmax logits.
  The loader returns ``log σ(σ s_k)`` per class, whose softmax is the one-vs-rest
  probabilities normalised to sum to 1 (LightGBM's own ``predict`` leaves them
  unnormalised);
* every other objective (regression, ranking, ``cross_entropy_lambda``, custom) is
  refused: the model must be a classifier whose scores have a known link.

``outputs="probabilities"`` returns the softmax (or the logistic function) of those
logits. LightGBM files record no class labels: :attr:`classes` is ``None`` (``0 … K−1``).
:attr:`feature_names` are the file's ``feature_names`` unless they are LightGBM's
defaults ``Column_0, Column_1, …``. A booster trained on pandas ``category`` columns gets
a DataFrame with those columns as ``category`` (LightGBM maps the values to its codes with
the categories it recorded); other models get a float64 matrix.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.model.features import Features
from epsstar.audit.model.plugins import OutputKind, import_optional
from epsstar.exceptions import InputFileError, InvalidInputError

from . import BatchedModel, check_outputs_argument, first_line, probabilities_from_logits

__all__ = ["LightGBMLoader", "LightGBMModel"]

_BINARY: Final = ("binary", "cross_entropy")
_MULTICLASS: Final = ("multiclass", "multiclassova")
_DEFAULT_NAME: Final = re.compile(r"Column_\d+")


def _header(text: str) -> dict[str, str]:
    """The ``key=value`` lines before the first tree."""
    head = text.split("\nTree=", 1)[0]
    pairs = (line.split("=", 1) for line in head.splitlines() if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def _categorical_indices(text: str) -> tuple[int, ...]:
    """The ``[categorical_feature: …]`` parameter: indices of the categorical features."""
    match = re.search(r"^\[categorical_feature: ([^\]]*)\]", text, flags=re.MULTILINE)
    if match is None:
        return ()
    return tuple(int(part) for part in re.split(r"[,\s]+", match.group(1)) if part.isdigit())


class LightGBMModel(BatchedModel):
    """A LightGBM classifier booster ready to predict (see the module docstring)."""

    def __init__(self, path: Path, booster: Any, text: str, *, outputs: OutputKind | None) -> None:
        header = _header(text)
        objective, *options = header.get("objective", "").split()
        if objective not in _BINARY + _MULTICLASS:
            raise InvalidInputError(
                f"the LightGBM model in {path} must be a classifier (objective binary, "
                f"cross_entropy, multiclass or multiclassova); retrain it with a "
                f"classification objective. Found objective {objective or 'none'!r}."
            )
        settings = dict(option.split(":", 1) for option in options if ":" in option)
        self._sigmoid = float(settings.get("sigmoid", "1"))
        self._objective = objective
        self._booster = booster
        names = tuple(str(name) for name in booster.feature_name())
        default = all(_DEFAULT_NAME.fullmatch(name) for name in names)
        self._names = None if default else names
        self._categorical = _categorical_indices(text) if booster.pandas_categorical else ()
        self._probabilities = outputs == "probabilities"
        super().__init__(
            path,
            n_features=int(booster.num_feature()),
            classes=None,
            outputs=outputs or "logits",
            input_dtype=np.float64,
        )

    @property
    def feature_names(self) -> tuple[str, ...] | None:
        return self._names

    @property
    def objective(self) -> str:
        """The booster's objective, as the file names it."""
        return self._objective

    def _prepare(self, features: Features) -> Any:
        if not self._categorical:
            return self._matrix(features)
        import pandas as pd

        if features.is_tensor or features.width != self._n_features:
            raise InvalidInputError(
                f"features must be {self._n_features} columns, the input width of "
                f"{self.source}. Found {features.width} column(s) of shape "
                f"{features.record_shape}."
            )
        frame = features.frame()
        frame.columns = list(self._names or (f"Column_{i}" for i in range(features.width)))
        for index, column in enumerate(frame.columns):
            if index in self._categorical:
                frame[column] = frame[column].astype("category")
            else:
                frame[column] = pd.to_numeric(frame[column], errors="raise")
        return frame

    def _run_batch(self, batch: Any) -> NDArray[Any]:
        try:
            raw = np.asarray(
                self._booster.predict(batch, raw_score=True, num_threads=1), dtype=np.float64
            )
        except Exception as error:
            raise InvalidInputError(
                f"the LightGBM model in {self.source} must accept the features "
                f"({len(batch)} records). Found {type(error).__name__}: {first_line(error)}."
            ) from error
        if self._objective == "multiclassova":
            logits = -np.logaddexp(0.0, -self._sigmoid * raw)  # log σ(σ s_k)
        elif self._objective in _BINARY:
            logits = self._sigmoid * raw if self._objective == "binary" else raw
        else:
            logits = raw
        if not self._probabilities:
            return logits
        return probabilities_from_logits(logits)


class LightGBMLoader:
    """Loads LightGBM text model files (``.txt``)."""

    name = "lightgbm"
    suffixes: tuple[str, ...] = (".txt",)

    def load(
        self, path: Path, *, outputs: OutputKind | None = None, trust: bool = False
    ) -> LightGBMModel:
        """Open ``path``; ``trust`` is not needed (reading a booster runs no code)."""
        outputs = check_outputs_argument(outputs)
        path = Path(path)
        if not path.is_file():
            raise InputFileError(f"the model file must exist. Found no file at {path}.")
        lgb = import_optional("lightgbm", loader=self.name)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise InputFileError(
                f"the .txt model file must be a LightGBM model saved with "
                f"Booster.save_model. Found {path} ({type(error).__name__})."
            ) from None
        if not text.startswith("tree") or "\nend of trees" not in text:
            raise InputFileError(
                f"the .txt model file must be a whole LightGBM model saved with "
                f"Booster.save_model (starting with 'tree', ending its trees with "
                f"'end of trees'); pass --loader to pick another loader. Found {path}, "
                f"which is not one."
            )
        try:
            booster = lgb.Booster(model_str=text)
        except Exception as error:
            raise InputFileError(
                f"the .txt model file must be a readable LightGBM model. Found {path} "
                f"({type(error).__name__}: {first_line(error)})."
            ) from None
        return LightGBMModel(path, booster, text, outputs=outputs)
