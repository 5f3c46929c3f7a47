"""What a served model's protocol gives the loader, and the rules every protocol shares.

An :class:`Endpoint` is one protocol's mapping of records to requests and of answers to
scores: the Open Inference Protocol (:mod:`.open_inference`) and the MLflow scoring server
(:mod:`.mlflow_scoring`); the loader chooses it from the URL's path.

Class labels are refused (:func:`refuse_labels`). An endpoint that answers the predicted
class only (MLflow's scikit-learn flavour serves ``predict`` unless logged otherwise,
MLServer's scikit-learn runtime answers ``predict`` unless asked for ``predict_proba``)
says nothing of how confident the model is in a record's label, which is what membership
leaks through: a 0/1 correctness loss would turn Epsilon* into a reading of a weaker attack
and let a release gate pass a model whose probabilities leak. The audit asks for the
probabilities to be served instead, and says how.
"""

from __future__ import annotations

import re
from typing import Any, Final, Protocol

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.inputs.served import ServedSource
from epsstar.audit.model.features import Features
from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.files.input_bounds import shown

__all__ = [
    "HOW_TO_SERVE_PROBABILITIES",
    "OPEN_INFERENCE_PATH",
    "Endpoint",
    "refuse_labels",
    "scores_of",
]

FloatArray = NDArray[np.float64]

HOW_TO_SERVE_PROBABILITIES: Final = (
    "serve them instead: MLServer's scikit-learn runtime answers the output predict_proba "
    "when asked (--served-output predict_proba, or predict_fn in its model settings); an "
    'MLflow model logged with pyfunc_predict_fn="predict_proba" serves them'
)

#: ``.../v2/models/NAME`` or ``.../v2/models/NAME/versions/VERSION`` (``/infer`` allowed).
OPEN_INFERENCE_PATH: Final = re.compile(
    r"^(?P<root>.*)/v2/models/(?P<name>[^/]+)(/versions/(?P<version>[^/]+))?(/infer)?$"
)


class Endpoint(Protocol):
    """One served model as a protocol reaches it."""

    @property
    def source(self) -> ServedSource:
        """The URL, the protocol and what the server reports of the model."""
        ...

    @property
    def n_features(self) -> int | None:
        """The input width the server states, if it states one."""
        ...

    @property
    def feature_names(self) -> tuple[str, ...] | None:
        """The names of the inputs the server states, if it states them."""
        ...

    @property
    def input_dtype(self) -> np.dtype[Any]:
        """The type the features are sent as."""
        ...

    @property
    def takes_text(self) -> bool:
        """Whether text columns are sent as they are (the server's model encodes them)."""
        ...

    def scores(self, batch: Features | NDArray[Any]) -> FloatArray:
        """The model's scores for one batch of records, in one request: ``(n,)`` or
        ``(n, K)``. ``batch`` is the features (when :attr:`takes_text`), else their
        matrix of :attr:`input_dtype`."""
        ...


def refuse_labels(where: str, found: str) -> InvalidInputError:
    """The error for an endpoint that answers class labels (see the module docstring)."""
    return InvalidInputError(
        f"{where}: the served model must answer class probabilities or logits, since "
        f"membership leaks through how confident a model is, which class labels do not "
        f"show; {HOW_TO_SERVE_PROBABILITIES}. Found {found}."
    )


def scores_of(values: Any, rows: int, where: str) -> FloatArray:
    """Finite float scores, ``(rows,)`` or ``(rows, K)``, from a JSON list of numbers (or
    of rows of numbers); any other shape is one line naming it."""
    if not isinstance(values, list) or len(values) != rows:
        size = f"a list of {len(values)}" if isinstance(values, list) else shown(values)
        raise InvalidInputError(
            f"{where}: the answer must hold one prediction per record ({rows}). Found {size}."
        )
    if rows and all(isinstance(row, list) for row in values):
        widths = {len(row) for row in values}
        if len(widths) != 1 or 0 in widths:
            raise InvalidInputError(
                f"{where}: the answer's rows must have one score per class, as many in each "
                f"row. Found rows of {', '.join(str(w) for w in sorted(widths)[:4])} values."
            )
        flat = [value for row in values for value in row]
        shape: tuple[int, ...] = (rows, widths.pop())
    else:
        flat, shape = values, (rows,)
    bad = next((v for v in flat if not isinstance(v, float | int) or isinstance(v, bool)), None)
    if bad is not None:
        raise InvalidInputError(
            f"{where}: the answer must hold numbers (scores). Found {shown(bad)}."
        )
    array = np.asarray(flat, dtype=np.float64).reshape(shape)
    finite = np.isfinite(array)
    if not finite.all():
        raise InvalidInputError(
            f"{where}: the scores must be finite. Found {array[~finite].flat[0]}."
        )
    return array
