"""Served models: a model behind an HTTP endpoint, audited through its server.

The ``served`` loader claims ``http`` and ``https`` URLs (its ``schemes``, read by
:func:`epsstar.audit.model.plugins.loader_for_url`) rather than file suffixes. Two
protocols are read, told apart by the URL's path (:data:`.protocol.OPEN_INFERENCE_PATH`): the Open
Inference Protocol of MLServer, Triton and KServe (:mod:`.open_inference`; the URL names
``/v2/models/NAME``) and the MLflow scoring server (:mod:`.mlflow_scoring`; the URL is the
server's base). The HTTP session (:mod:`.session`) holds the timeouts, retries, back-off
and rate of :class:`~epsstar.audit.inputs.served.Serving`; :class:`.model.ServedModel` is
what the audit streams the records through. Class labels are refused, not read as a
correctness loss (:mod:`.protocol` says why).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from epsstar.audit.inputs.served import DEFAULT_SERVING, Serving, shown_url
from epsstar.audit.model.plugins import OutputKind
from epsstar.exceptions import InvalidInputError

from .. import check_outputs_argument
from .mlflow_scoring import MlflowEndpoint
from .model import ServedModel
from .open_inference import OpenInferenceEndpoint
from .protocol import OPEN_INFERENCE_PATH, Endpoint
from .session import Session

__all__ = ["SCHEMES", "ServedLoader", "ServedModel"]

SCHEMES: Final = ("http", "https")


class ServedLoader:
    """The ``served`` loader: models behind an Open Inference Protocol or MLflow server."""

    name = "served"
    suffixes: tuple[str, ...] = ()
    schemes = SCHEMES

    def load(
        self, path: Path, *, outputs: OutputKind | None = None, trust: bool = False
    ) -> ServedModel:
        """Refused: a served model is named by its URL (:meth:`load_url`)."""
        raise InvalidInputError(
            f"the served loader reads models behind a URL (http://..., https://...), not "
            f"files. Found the file {str(path)!r}."
        )

    def load_url(
        self, url: str, *, outputs: OutputKind | None = None, serving: Serving = DEFAULT_SERVING
    ) -> ServedModel:
        """The model served at ``url``, its server asked what it serves now."""
        kind = check_outputs_argument(outputs)
        session = Session(url, serving)
        if session.base.split("://")[0].lower() not in SCHEMES:
            raise InvalidInputError(
                f"a served model's URL must start with {' or '.join(f'{s}://' for s in SCHEMES)}. "
                f"Found {shown_url(url)!r}."
            )
        try:
            return ServedModel(_endpoint_for(session, serving), session, kind)
        except BaseException:
            session.close()
            raise


def _endpoint_for(session: Session, serving: Serving) -> Endpoint:
    """The Open Inference Protocol for a URL whose path names ``/v2/models/NAME``, else the
    MLflow scoring server (its base URL, or its ``/invocations``)."""
    found = OPEN_INFERENCE_PATH.match(session.path)
    if found is not None:
        return OpenInferenceEndpoint(
            session, found["root"], found["name"], found["version"], serving.output
        )
    if serving.output is not None:
        raise InvalidInputError(
            f"--served-output names an output of an Open Inference Protocol server (a URL "
            f"with /v2/models/NAME); the MLflow scoring server has one. Found "
            f"{serving.output!r} for {session.shown}."
        )
    return MlflowEndpoint(session, session.path.removesuffix("/invocations"))
