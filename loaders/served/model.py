"""A served model as the audit reads it: a :class:`~epsstar.loaders.BatchedModel` whose
batches are requests to its server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.inputs.served import ServedSource
from epsstar.audit.model.features import Features
from epsstar.audit.model.plugins import OutputKind

from .. import BatchedModel
from .protocol import Endpoint
from .session import Session

__all__ = ["ServedModel"]


class ServedModel(BatchedModel):
    """The model behind ``endpoint``: each :meth:`predict` call is one request of the rows
    it is given (the audit's ``--batch-size``); two class columns become one value per
    record, the probability (or log-odds) of the second class; probabilities and logits
    are told apart by the detection rule of :class:`~epsstar.loaders.BatchedModel`, on a
    probe of 49 records when the server states the input width, else on the first batch.
    Its :attr:`served` record stands in the provenance where a model file's digest would."""

    def __init__(self, endpoint: Endpoint, session: Session, outputs: OutputKind | None) -> None:
        self._endpoint = endpoint
        self._session = session
        name = endpoint.source.model_name or "the served model"
        super().__init__(
            Path(name),
            n_features=endpoint.n_features,
            classes=None,
            outputs=outputs,
            input_dtype=endpoint.input_dtype,
            binary_columns=True,
        )

    @property
    def served(self) -> ServedSource:
        """Where the model was reached, by which protocol, and what the server reported."""
        return self._endpoint.source

    @property
    def files(self) -> tuple[Path, ...]:
        """None: no file of the model is read."""
        return ()

    @property
    def feature_names(self) -> tuple[str, ...] | None:
        return self._endpoint.feature_names

    @property
    def takes_text(self) -> bool:
        return self._endpoint.takes_text

    def _prepare(self, features: Features) -> Any:
        return features if self._endpoint.takes_text else self._matrix(features)

    def _run_batch(self, batch: Any) -> NDArray[np.float64]:
        return self._endpoint.scores(batch)

    def close(self) -> None:
        """Close the connections to the server."""
        self._session.close()
