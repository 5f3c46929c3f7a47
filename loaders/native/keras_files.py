"""Keras models saved as ``.keras`` files (``model.save``) or in the legacy HDF5 format
(``.h5``, ``.hdf5``), run with the torch backend.

Keras 3 runs on PyTorch (``KERAS_BACKEND=torch``, set by this loader unless the
environment chose a backend), so no TensorFlow is needed. The file is read with
``keras.saving.load_model(path, compile=False, safe_mode=not trust)``, which reads both
formats: Keras' safe mode refuses to deserialise Python lambdas (``Lambda`` layers), which
would run code; such a file needs ``--trust-model``. Other custom objects are refused by
Keras itself unless registered.

A TensorFlow SavedModel folder (``saved_model.pb``) is claimed and refused with the
command that converts it to ONNX (:data:`SAVED_MODEL_CONVERSION`): Keras 3 reads one only
through TensorFlow, which epsstar does not depend on.

The model takes one input: the features' one tensor column as it is (an image batch), or
the ``(n, d)`` matrix of their scalar columns, cast to float32.

Exact losses: when the model's last layer is a ``Dense`` layer ending in a softmax or
sigmoid, that activation is switched to the identity in the loaded copy (Keras applies a
``Dense`` layer's activation last, to ``x W + b``), so the model returns the scores before
it, in float64, and the output reading says so; ``outputs="probabilities"`` keeps the
activation. Otherwise the outputs are read by the rule of :mod:`epsstar.loaders`.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.model.features import Features
from epsstar.audit.model.output_reading import OutputReading
from epsstar.audit.model.plugins import ObjectIdentity, OutputKind, import_optional
from epsstar.exceptions import InputFileError, InvalidInputError

from .. import (
    BatchedModel,
    check_outputs_argument,
    first_line,
    in_memory,
    instance_of,
    object_source,
    refuse_unfitted,
)

__all__ = ["SAVED_MODEL_CONVERSION", "KerasLoader", "KerasModel"]

_ACTIVATIONS: Final = frozenset({"softmax", "sigmoid"})
_TRUST_FLAG: Final = "--trust-model"
_SAVED_MODEL: Final = "saved_model.pb"

SAVED_MODEL_CONVERSION: Final = "python -m tf2onnx.convert --saved-model {folder} --output {file}"
"""The command (tf2onnx, run where TensorFlow is installed) that turns a SavedModel folder
into an ONNX file the audit reads."""


def _final_activation(model: Any, keras: Any) -> str | None:
    """The name of the softmax/sigmoid ending the model's last ``Dense`` layer, if any."""
    last = model.layers[-1] if model.layers else None
    if not isinstance(last, keras.layers.Dense):
        return None
    name = getattr(last.activation, "__name__", None)
    return name if name in _ACTIVATIONS else None


class KerasModel(BatchedModel):
    """A Keras 3 model ready to predict (see the module docstring)."""

    def __init__(self, path: Path, model: Any, keras: Any, *, outputs: OutputKind | None):
        self._model = model
        if len(model.inputs) != 1:
            raise InvalidInputError(
                f"the Keras model in {path} must take one input. Found {len(model.inputs)}."
            )
        shape = tuple(model.inputs[0].shape)
        activation = None if outputs == "probabilities" else _final_activation(model, keras)
        if activation is not None:
            model.layers[-1].activation = keras.activations.linear
        width = shape[1] if len(shape) == 2 and isinstance(shape[1], int) else None
        super().__init__(
            path,
            n_features=width,
            classes=None,
            outputs="logits" if activation is not None and outputs is None else outputs,
            input_dtype=np.float32,
        )
        if activation is not None and outputs is None:
            layer = model.layers[-1].name
            self._reading = OutputReading(
                "logits", "loader", f"the scores before the final {activation} of Dense "
                f"layer {layer!r}"
            )  # fmt: skip

    def _prepare(self, features: Features) -> NDArray[Any]:
        """One tensor column as it is, else the ``(rows, d)`` matrix; as float32."""
        if features.is_tensor and features.width == 1:
            tensor = features.columns[0]
            self._check_range(tensor.reshape(tensor.shape[0], -1))
            return np.ascontiguousarray(tensor, dtype=np.float32)
        return self._matrix(features)

    def _run_batch(self, batch: NDArray[Any]) -> NDArray[Any]:
        try:
            output = self._model.predict(batch, batch_size=len(batch), verbose=0)
        except Exception as error:
            raise InvalidInputError(
                f"the Keras model in {self.source} must accept the features "
                f"({' × '.join(map(str, batch.shape))} {batch.dtype}). Found "
                f"{type(error).__name__}: {first_line(error)}"
            ) from error
        return np.asarray(output, dtype=np.float64)


class KerasLoader:
    """Loads Keras ``.keras`` and legacy ``.h5`` files with the torch backend; refuses
    TensorFlow SavedModel folders with the command that converts them."""

    name = "keras"
    suffixes: tuple[str, ...] = (".keras", ".h5", ".hdf5")

    def reads_folder(self, path: Path) -> bool:
        """A TensorFlow SavedModel folder: claimed, to be refused with its conversion."""
        return (Path(path) / _SAVED_MODEL).is_file()

    def load(
        self, path: Path, *, outputs: OutputKind | None = None, trust: bool = False
    ) -> KerasModel:
        """Open ``path`` in Keras' safe mode unless ``trust`` (module docstring)."""
        outputs = check_outputs_argument(outputs)
        path = Path(path)
        if self.reads_folder(path):
            command = SAVED_MODEL_CONVERSION.format(
                folder=shlex.quote(str(path)), file=shlex.quote(f"{path}.onnx")
            )
            raise InputFileError(
                f"the TensorFlow SavedModel folder must be converted to ONNX first (Keras 3 "
                f"reads it only through TensorFlow): run {command} where TensorFlow is "
                f"installed, and audit that file. Found {path} with {_SAVED_MODEL}."
            )
        if not path.is_file():
            raise InputFileError(f"the model file must exist. Found no file at {path}.")
        os.environ.setdefault("KERAS_BACKEND", "torch")
        keras = import_optional("keras", loader=self.name)
        try:
            model = keras.saving.load_model(str(path), compile=False, safe_mode=not trust)
        except Exception as error:
            text = str(error)
            if "arbitrary code execution" in text or "safe_mode" in text:
                raise InvalidInputError(
                    f"the Keras model {path} must hold no Python code to be loaded without "
                    f"{_TRUST_FLAG}; Keras' safe mode refuses its lambda. Load it with "
                    f"{_TRUST_FLAG} only if you trust its source. Found a Python lambda."
                ) from None
            raise InputFileError(
                f"the model file must be a Keras model saved with model.save (.keras, or "
                f"the legacy .h5). Found {path} ({type(error).__name__}: {first_line(error)})."
            ) from None
        return KerasModel(path, model, keras, outputs=outputs)

    def claims_object(self, obj: object) -> bool:
        """A Keras 3 ``Model`` (``Sequential`` or functional)."""
        return instance_of(obj, "keras", "Model")

    def load_object(self, obj: Any, *, outputs: OutputKind | None = None) -> KerasModel:
        """A clone of ``obj`` with its weights (the loader replaces a final softmax or sigmoid
        to read logits; the caller's model is left as it was), hashed by its weights."""
        outputs = check_outputs_argument(outputs)
        keras = import_optional("keras", loader=self.name)
        refuse_unfitted(obj, bool(obj.built))
        weights = [np.asarray(weight) for weight in obj.get_weights()]
        identity = ObjectIdentity.of(obj, "its weights (shapes and bytes)", lambda: _bytes(weights))
        try:
            copy = keras.models.clone_model(obj)
        except Exception as error:
            raise InvalidInputError(
                f"the Keras model must be one keras.models.clone_model copies (Sequential or "
                f"functional); save it with model.save and audit the file. Found "
                f"{type(error).__name__}: {first_line(error)}"
            ) from None
        copy.set_weights(weights)
        return in_memory(KerasModel(object_source(obj), copy, keras, outputs=outputs), identity)


def _bytes(weights: list[NDArray[Any]]) -> bytes:
    """The weights, deterministically: each one's shape, type and bytes, in order."""
    return b"\n".join(
        f"{w.shape}|{w.dtype}|".encode() + np.ascontiguousarray(w).tobytes() for w in weights
    )
