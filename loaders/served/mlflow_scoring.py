"""The MLflow scoring server (``mlflow models serve``) for a served model.

The URL is the server's base (``http://host:5000``, or its ``/invocations``). Loading asks
``GET /ping`` (the server is up and its model loaded) and ``GET /version`` (the MLflow
version serving it; both answer text). The records are sent as
``POST /invocations`` with ``{"dataframe_split": {"columns": [...], "data": [...]}}``,
under the names of the data's columns (or those ``--features`` names), text columns as
text, so a model whose signature names its columns, or a pipeline that encodes categories
itself, receives them as it was logged.

The answer's ``predictions`` must be a list of rows of class scores (``predict_proba``:
``[[p0, p1, ...], ...]``) or of one score per record; a list of whole numbers, booleans or
text is class labels (a scikit-learn model's default ``predict``) and is refused
(:func:`~.protocol.refuse_labels`). The server states no input width or names: the
columns reach it as the audit matches them without a model that records names.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.inputs.served import ServedSource
from epsstar.audit.model.features import Features, as_features
from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.files.input_bounds import shown
from epsstar.plumbing.records.json_types import JsonValue

from .protocol import FloatArray, refuse_labels, scores_of
from .session import Session

__all__ = ["MlflowEndpoint"]

PROTOCOL: Final = "mlflow-scoring"


def _plain(value: Any) -> Any:
    """A JSON-ready Python value of one cell."""
    return value.item() if isinstance(value, np.generic) else value


class MlflowEndpoint:
    """The model of the MLflow scoring server whose base path is ``root``."""

    def __init__(self, session: Session, root: str) -> None:
        self._session = session
        self._root = root
        self._where = session.shown
        session.get_text(f"{root}/ping")
        try:
            version = session.get_text(f"{root}/version").strip()
        except InvalidInputError:
            version = ""  # the version is not needed to audit
        self._source = ServedSource(
            url=session.shown,
            protocol=PROTOCOL,
            model_name=None,
            model_version=None,
            server=f"mlflow {shown(version, 40).strip(chr(39))}" if version else None,
        )

    @property
    def source(self) -> ServedSource:
        return self._source

    @property
    def n_features(self) -> int | None:
        return None

    @property
    def feature_names(self) -> tuple[str, ...] | None:
        return None

    @property
    def input_dtype(self) -> np.dtype[Any]:
        return np.dtype(np.float64)

    @property
    def takes_text(self) -> bool:
        return True

    def scores(self, batch: Features | NDArray[Any]) -> FloatArray:
        features = as_features(batch)
        columns = [[_plain(v) for v in column.tolist()] for column in features.columns]
        body: JsonValue = {
            "dataframe_split": {
                "columns": list(features.names),
                "data": [list(row) for row in zip(*columns, strict=True)],
            }
        }
        answer = self._session.post(f"{self._root}/invocations", body)
        where = f"{self._where}/invocations"
        predictions = answer.get("predictions") if isinstance(answer, dict) else None
        if predictions is None:
            raise InvalidInputError(
                f'{where}: the answer must be {{"predictions": [...]}}. Found {shown(answer)}.'
            )
        if (
            isinstance(predictions, list)
            and predictions
            and all(isinstance(p, str | int) for p in predictions)
        ):
            raise refuse_labels(where, f"labels such as {shown(predictions[:3])}")
        return scores_of(predictions, features.rows, where)
