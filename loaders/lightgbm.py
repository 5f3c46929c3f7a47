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
defaults ``Column_0, Column_1, …``.

Inputs: a float64 matrix, missing values (NaN) passed on (LightGBM handles them, so
:attr:`accepts_missing` is true). The categorical features are those the file bins as
categories (their ``feature_infos`` entry lists codes); a booster trained on pandas ``category``
columns records their categories (``pandas_categorical``), and a text column, or a column
of numbers for a category of numbers, is mapped to LightGBM's codes with them; numbers
given for a category of text are its codes, as LightGBM reads a numeric column
(:mod:`epsstar.loaders.categories`). A category the model was not trained on is missing,
as in LightGBM's own ``predict`` on a DataFrame, and the audit says how many records held
one. The file does not record which columns
were ``category`` columns: the ``k``-th recorded list belongs to the ``k``-th categorical
feature, which holds when the model splits every ``category`` column and no other column
as categorical (LightGBM's default). Otherwise (an ordered ``category`` column, or an
integer column declared categorical beside ``category`` columns) text is refused and
numbers are codes; a model whose lists then hold numbers is refused, since its numbers
could be categories or codes.

Self-check: the first records of the first batch are scored by ``Booster.predict`` too
(LightGBM's probabilities, from a DataFrame of ``category`` columns when the booster has
recorded categories, so that LightGBM maps them itself), and must agree within
:data:`OWN_TOLERANCE`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.model.features import Features
from epsstar.audit.model.own_predictions import OwnPredictions
from epsstar.audit.model.plugins import ObjectIdentity, OutputKind, import_optional
from epsstar.exceptions import InputFileError, InvalidInputError

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

__all__ = ["OWN_TOLERANCE", "LightGBMLoader", "LightGBMModel"]

_BINARY: Final = ("binary", "cross_entropy")
_MULTICLASS: Final = ("multiclass", "multiclassova")
_DEFAULT_NAME: Final = re.compile(r"Column_\d+")

OWN_TOLERANCE: Final = 1e-9
"""Largest difference of a probability allowed between the loader and ``Booster.predict``.

Both sum the same trees in float64 to the same raw scores; they differ only in evaluating
the logistic function or the softmax (LightGBM's C++ ``exp`` against numpy's), a few units
in the last place (about 1e-16). A wrong category, a missing or extra tree, or a wrong link
moves a probability by far more than 1e-9."""


def _header(text: str) -> dict[str, str]:
    """The ``key=value`` lines before the first tree."""
    head = text.split("\nTree=", 1)[0]
    pairs = (line.split("=", 1) for line in head.splitlines() if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def _categorical_indices(header: dict[str, str]) -> tuple[int, ...]:
    """The features LightGBM binned as categorical: their ``feature_infos`` entry lists the
    codes seen in training (``-1:3:0:1:2``) where a numeric one gives a range (``[a:b]``)
    and an unused one ``none``."""
    infos = header.get("feature_infos", "").split()
    return tuple(
        index for index, info in enumerate(infos) if not info.startswith("[") and info != "none"
    )


def _categories(
    path: Path, header: dict[str, str], recorded: list[Any] | None
) -> tuple[dict[int, Categories | None], str]:
    """Each categorical feature's recorded categories (the ``k``-th list for the ``k``-th
    feature, when there are as many), and why there are none where they cannot be told."""
    indices = _categorical_indices(header)
    lists = [Categories(tuple(values)) for values in recorded or []]
    if not lists or len(lists) == len(indices):
        return {index: (lists[k] if lists else None) for k, index in enumerate(indices)}, ""
    numbers = [categories for categories in lists if categories.by_value]
    if numbers:
        raise InvalidInputError(
            f"the LightGBM model in {path} records {len(lists)} lists of pandas categories "
            f"for {len(indices)} categorical features, so which list is whose is unknown, and "
            f"a list holds numbers, which the data could give as categories or as codes; "
            f"retrain it with pandas category columns as its only categorical features "
            f"(LightGBM's default). Found categories {numbers[0].shown()}."
        )
    why = (
        f" ({len(lists)} lists of pandas categories for {len(indices)} categorical features "
        f"cannot be matched to them)"
    )
    return dict.fromkeys(indices), why


class LightGBMModel(BatchedModel):
    """A LightGBM classifier booster ready to predict (see the module docstring)."""

    def __init__(
        self,
        path: Path,
        booster: Any,
        text: str,
        *,
        outputs: OutputKind | None,
        classes: tuple[object, ...] | None = None,
    ) -> None:
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
        categorical, why = _categories(path, header, booster.pandas_categorical)
        self._reader = CategoricalReader(
            path, "LightGBM", names, categorical, why_no_categories=why
        )
        self._probabilities = outputs == "probabilities"
        super().__init__(
            path,
            n_features=int(booster.num_feature()),
            classes=classes,
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

    @property
    def takes_text(self) -> bool:
        """True when a categorical feature has recorded categories to read text as."""
        return self._reader.takes_text

    @property
    def accepts_missing(self) -> bool:
        """LightGBM handles missing values (NaN) itself."""
        return True

    @property
    def categorical(self) -> tuple[int, ...]:
        """The indices of the features LightGBM splits as categories."""
        return self._reader.categorical

    @property
    def input_notes(self) -> tuple[str, ...]:
        """How many records read so far held a category the model never saw."""
        return self._reader.notes()

    def _prepare(self, features: Features) -> Any:
        return self._reader.matrix(features)

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

    def _own_predictions(self, sample: Features) -> OwnPredictions:
        """``Booster.predict`` (probabilities) on the sample, from a DataFrame of ``category``
        columns when the booster recorded categories; multiclassova's one-vs-rest
        probabilities normalised to sum to 1, as the loader reads them."""
        matrix = self._reader.matrix(sample, counted=False)
        frame = self._reader.frame(sample, matrix)
        data = matrix if frame is None else frame
        own = np.asarray(self._booster.predict(data, num_threads=1), dtype=np.float64)
        if self._objective == "multiclassova":
            own = own / own.sum(axis=1, keepdims=True)
        return OwnPredictions("LightGBM", "Booster.predict", "probabilities", own, OWN_TOLERANCE)


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

    def claims_object(self, obj: object) -> bool:
        """A LightGBM ``Booster`` or scikit-learn wrapper (``LGBMClassifier``)."""
        return instance_of(obj, "lightgbm", "Booster", "LGBMModel")

    def load_object(self, obj: Any, *, outputs: OutputKind | None = None) -> LightGBMModel:
        """The booster of ``obj`` read back from its ``model_to_string()``, the text
        ``save_model`` writes (so the audit reads what a file would hold), hashed by it; a
        scikit-learn wrapper's ``classes_`` are the class labels (a file records none)."""
        outputs = check_outputs_argument(outputs)
        lgb = import_optional("lightgbm", loader=self.name)
        booster: Any = obj if isinstance(obj, lgb.Booster) else getattr(obj, "_Booster", None)
        refuse_unfitted(obj, booster is not None)
        text = booster.model_to_string()
        identity = ObjectIdentity.of(obj, "its model_to_string()", text.encode)
        # The wrapper numbers its labels in the order of classes_; a file records none.
        labels = getattr(obj, "classes_", None) if obj is not booster else None
        classes = None if labels is None else tuple(np.asarray(labels).tolist())
        model = LightGBMModel(
            object_source(obj), lgb.Booster(model_str=text), text, outputs=outputs, classes=classes
        )
        return in_memory(model, identity)
