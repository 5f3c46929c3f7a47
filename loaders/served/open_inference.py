"""The Open Inference Protocol (KServe v2: MLServer, Triton, KServe) for a served model.

The URL names the model: ``{root}/v2/models/{name}`` or
``{root}/v2/models/{name}/versions/{version}``. Loading reads the server's metadata
(``GET {root}/v2``: its name and version) and the model's (``GET`` the model's URL: its
name, versions, inputs and outputs). The records are sent as one input tensor,
``POST .../infer`` with ``{"inputs": [{"name", "shape": [rows, d], "datatype", "data"}]}``:
the input the metadata lists (its name, its numeric datatype, its width when it states
one), else ``input-0`` in FP64 (MLServer's scikit-learn runtime lists none unless its
model settings do).

The output read is the one ``--served-output`` names (asked for in the request, as
MLServer's scikit-learn runtime needs for ``predict_proba``), else the one output the
metadata lists, else the one output answered. Its shape must be ``[rows]`` or
``[rows, K]`` with ``rows × K`` values; an integer, boolean or text output is class labels
and is refused (:func:`~.protocol.refuse_labels`).
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.inputs.served import ServedSource
from epsstar.audit.model.features import Features
from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.files.input_bounds import shown
from epsstar.plumbing.records.json_types import JsonObject, JsonValue

from .protocol import FloatArray, refuse_labels, scores_of
from .session import Session

__all__ = ["DATATYPES", "OpenInferenceEndpoint"]

PROTOCOL: Final = "open-inference-v2"

#: The protocol's numeric datatypes, as numpy types.
DATATYPES: Final = {
    "FP64": np.float64,
    "FP32": np.float32,
    "FP16": np.float16,
    "INT64": np.int64,
    "INT32": np.int32,
    "INT16": np.int16,
    "INT8": np.int8,
    "UINT64": np.uint64,
    "UINT32": np.uint32,
    "UINT16": np.uint16,
    "UINT8": np.uint8,
    "BOOL": np.bool_,
}
_SCORES: Final = ("FP64", "FP32", "FP16")
_DEFAULT_INPUT: Final = "input-0"


def _text(value: JsonValue) -> str | None:
    return value if isinstance(value, str) and value else None


class OpenInferenceEndpoint:
    """The model ``name`` (``version``: one of its versions, ``None``: the server's choice)
    of the Open Inference Protocol server at ``root``."""

    def __init__(
        self, session: Session, root: str, name: str, version: str | None, output: str | None
    ) -> None:
        self._session = session
        self._model = f"{root}/v2/models/{name}" + (f"/versions/{version}" if version else "")
        self._output = output
        self._where = session.shown
        metadata = session.get(self._model)
        try:
            server: JsonValue = session.get(f"{root}/v2")
        except InvalidInputError:
            server = None  # the server's own metadata is optional to the audit
        if not isinstance(metadata, dict):
            raise InvalidInputError(
                f"{self._where}: the model's metadata must be a JSON object. Found "
                f"{shown(metadata)}."
            )
        self._input = self._input_of(metadata.get("inputs", []))
        listed = metadata.get("outputs", [])
        names = (
            [o.get("name") for o in listed if isinstance(o, dict)]
            if isinstance(listed, list)
            else []
        )
        if output is None and len(names) == 1 and isinstance(names[0], str):
            self._output = names[0]
        versions = metadata.get("versions")
        reported = version or (
            versions[-1] if isinstance(versions, list) and len(versions) == 1 else None
        )
        self._source = ServedSource(
            url=session.shown,
            protocol=PROTOCOL,
            model_name=_text(metadata.get("name")) or name,
            model_version=reported if isinstance(reported, str) else None,
            server=_server_of(server),
        )

    def _input_of(self, inputs: JsonValue) -> tuple[str, np.dtype[Any], int | None]:
        """The input tensor's name, type and width (``None``: unknown)."""
        if not isinstance(inputs, list) or not inputs:
            return _DEFAULT_INPUT, np.dtype(np.float64), None
        if len(inputs) > 1 or not isinstance(inputs[0], dict):
            names = [i.get("name") for i in inputs if isinstance(i, dict)]
            raise InvalidInputError(
                f"{self._where}: the served model must take one input tensor of shape "
                f"[rows, features]. Found {len(inputs)} inputs: {shown(names)}."
            )
        spec = inputs[0]
        name, datatype, shape = spec.get("name"), spec.get("datatype"), spec.get("shape")
        if not isinstance(name, str) or datatype not in DATATYPES:
            raise InvalidInputError(
                f"{self._where}: the model's input must have a name and a numeric datatype "
                f"({', '.join(DATATYPES)}). Found {shown(name)} of {shown(datatype)}."
            )
        width = None
        if isinstance(shape, list) and len(shape) == 2 and isinstance(shape[1], int):
            width = shape[1] if shape[1] > 0 else None
        elif isinstance(shape, list) and len(shape) not in (1, 2):
            raise InvalidInputError(
                f"{self._where}: the model's input must have the shape [rows, features]. "
                f"Found {shown(shape)}."
            )
        return name, np.dtype(DATATYPES[str(datatype)]), width

    @property
    def source(self) -> ServedSource:
        return self._source

    @property
    def n_features(self) -> int | None:
        return self._input[2]

    @property
    def feature_names(self) -> tuple[str, ...] | None:
        return None

    @property
    def input_dtype(self) -> np.dtype[Any]:
        return self._input[1]

    @property
    def takes_text(self) -> bool:
        return False

    def scores(self, batch: Features | NDArray[Any]) -> FloatArray:
        matrix = batch.matrix() if isinstance(batch, Features) else np.asarray(batch)
        name, dtype, _ = self._input
        datatype = next(key for key, value in DATATYPES.items() if np.dtype(value) == dtype)
        body: JsonObject = {
            "inputs": [
                {
                    "name": name,
                    "shape": list(matrix.shape),
                    "datatype": datatype,
                    "data": matrix.astype(dtype).ravel().tolist(),
                }
            ]
        }
        if self._output is not None:
            body["outputs"] = [{"name": self._output}]
        answer = self._session.post(f"{self._model}/infer", body)
        return self._read(answer, matrix.shape[0])

    def _read(self, answer: JsonValue, rows: int) -> FloatArray:
        where = f"{self._where}/infer"
        listed = answer.get("outputs") if isinstance(answer, dict) else None
        outputs = [o for o in listed if isinstance(o, dict)] if isinstance(listed, list) else []
        if not isinstance(listed, list) or len(outputs) != len(listed):
            raise InvalidInputError(
                f"{where}: the answer must have a list of outputs. Found {shown(answer)}."
            )
        chosen = [o for o in outputs if self._output is None or o.get("name") == self._output]
        if len(chosen) != 1:
            wanted = "the output asked for" if self._output else "one output"
            raise InvalidInputError(
                f"{where}: the answer must hold {wanted}; name the one to read with "
                f"--served-output. Found the outputs {shown([o.get('name') for o in outputs])}."
            )
        output = chosen[0]
        datatype = output.get("datatype")
        if datatype not in _SCORES:
            found = f"the output {shown(output.get('name'))} of {shown(datatype)}"
            raise refuse_labels(where, found)
        return scores_of(_rows(output.get("shape"), output.get("data"), rows, where), rows, where)


def _rows(shape: JsonValue, data: JsonValue, rows: int, where: str) -> JsonValue:
    """An output's data as one value per record, or one row of values per record."""
    sizes = [n for n in shape if isinstance(n, int) and n > 0] if isinstance(shape, list) else []
    if not isinstance(shape, list) or len(sizes) != len(shape) or len(sizes) not in (1, 2):
        raise InvalidInputError(
            f"{where}: the output must have the shape [{rows}] or [{rows}, classes]. "
            f"Found {shown(shape)}."
        )
    if sizes[0] != rows:
        raise InvalidInputError(
            f"{where}: the output must hold one prediction per record ({rows}). Found the "
            f"shape {sizes}."
        )
    if not isinstance(data, list):
        raise InvalidInputError(f"{where}: the output's data must be a list. Found {shown(data)}.")
    flat = [v for row in data for v in (row if isinstance(row, list) else [row])]
    width = sizes[1] if len(sizes) == 2 else 1
    if len(flat) != rows * width:
        raise InvalidInputError(
            f"{where}: the output's data must hold as many values as its shape {sizes} says "
            f"({rows * width}). Found {len(flat)}."
        )
    if len(sizes) == 1:
        return flat
    return [flat[start : start + width] for start in range(0, len(flat), width)]


def _server_of(metadata: JsonValue) -> str | None:
    """``name version`` from the server's metadata, if it gives them."""
    if not isinstance(metadata, dict):
        return None
    parts = [_text(metadata.get("name")), _text(metadata.get("version"))]
    found = " ".join(part for part in parts if part)
    return found or None
