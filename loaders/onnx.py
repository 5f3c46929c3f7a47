"""ONNX models, run with onnxruntime on the CPU.

Covers the two common producers:

* classifiers converted by skl2onnx, with a label output and a probability output,
  either a tensor ``(n, K)`` or, with ZipMap, a list of ``{class: probability}`` dicts
  (turned into an ``(n, K)`` array in class order). The class labels come from the
  ZipMap or classifier node's ``classlabels_*`` attribute, or from the constant table
  the label output is looked up in. With two classes the loader returns one value per
  record, ``P(y = classes[1])``;
* networks exported by ``torch.onnx.export`` (or written by hand, or by ``epsstar
  train``) with one float output: logits or probabilities, detected by the rule of
  :mod:`epsstar.loaders` unless ``outputs=`` says. Their class labels, if the exporter
  recorded them, come from the ``metadata_props`` entry
  :data:`epsstar.audit.class_labels.CLASSES_KEY` (a JSON array, in output-column order).

The model must take one 2-D input (records × features); the features are cast to its
declared element type (float32, float64, int64, …). The input width, when the graph
fixes it, is :attr:`n_features`; a fixed batch dimension sets the chunk size.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.class_labels import CLASSES_KEY, classes_from_text
from epsstar.audit.plugins import OutputKind, import_optional
from epsstar.exceptions import InputFileError, InvalidInputError

from . import DEFAULT_BATCH_SIZE, BatchedModel, check_outputs_argument

__all__ = ["OnnxLoader", "OnnxModel"]

_DTYPES: Final[dict[str, Any]] = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(float16)": np.float16,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(int16)": np.int16,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}
_FLOAT_TENSORS: Final = ("tensor(float)", "tensor(double)", "tensor(float16)")
_CLASS_ATTRIBUTES: Final = ("classlabels_strings", "classlabels_int64s", "classlabels_ints")
_PASS_THROUGH: Final = ("Identity", "Reshape", "Cast", "Squeeze", "Flatten", "Unsqueeze")


def _is_prediction_output(type_name: str) -> bool:
    return type_name in _FLOAT_TENSORS or (
        type_name.startswith("seq(map(") and type_name.endswith("tensor(float)))")
    )


def _decode(value: Any) -> object:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.generic):
        return value.item()
    return value


def _recorded_classes(proto: Any, path: Path) -> tuple[object, ...] | None:
    """Class labels an exporter recorded in the model's metadata, if any."""
    for prop in proto.metadata_props:
        if prop.key == CLASSES_KEY:
            return classes_from_text(prop.value, path)
    return None


def _class_labels(proto: Any, label_output: str | None) -> tuple[object, ...] | None:
    """Class labels of a skl2onnx-style classifier graph, if the graph states them."""
    from onnx import helper, numpy_helper

    nodes = list(proto.graph.node)
    for wanted in ("ZipMap", None):
        for node in nodes:
            if wanted is not None and node.op_type != wanted:
                continue
            for attribute in node.attribute:
                if attribute.name in _CLASS_ATTRIBUTES:
                    values = helper.get_attribute_value(attribute)
                    if len(values):
                        return tuple(_decode(v) for v in values)
    if label_output is None:
        return None
    producers = {name: node for node in nodes for name in node.output}
    constants = {init.name: init for init in proto.graph.initializer}
    current = producers.get(label_output)
    for _ in range(len(nodes)):
        if current is None:
            return None
        if current.op_type == "ArrayFeatureExtractor" and current.input[0] in constants:
            table = numpy_helper.to_array(constants[current.input[0]]).reshape(-1)
            return tuple(_decode(v) for v in table)
        if current.op_type not in _PASS_THROUGH:
            return None
        current = producers.get(current.input[0])
    return None


class OnnxModel(BatchedModel):
    """An ONNX graph ready to predict (see the module docstring)."""

    def __init__(
        self,
        path: Path,
        session: Any,
        *,
        output_name: str,
        zipmap: bool,
        classes: tuple[object, ...] | None,
        n_features: int | None,
        input_name: str,
        input_dtype: Any,
        batch_size: int,
        fixed_batch: bool,
        outputs: OutputKind | None,
    ) -> None:
        self._session = session
        self._fixed_batch = batch_size if fixed_batch else 0
        self._output_name = output_name
        self._zipmap = zipmap
        self._input_name = input_name
        super().__init__(
            path,
            n_features=n_features,
            classes=classes,
            outputs=outputs,
            input_dtype=input_dtype,
            batch_size=batch_size,
            binary_columns=classes is not None,
        )

    def _run_batch(self, batch: NDArray[Any]) -> NDArray[Any]:
        rows = batch.shape[0]
        if self._fixed_batch and rows < self._fixed_batch:  # pad the last chunk
            batch = np.concatenate([batch, np.repeat(batch[-1:], self._fixed_batch - rows, 0)])
        try:
            (result,) = self._session.run([self._output_name], {self._input_name: batch})
        except Exception as error:
            message = str(error).strip().splitlines()[0] if str(error).strip() else ""
            raise InvalidInputError(
                f"the model in {self.source} must accept the features ({batch.shape[0]} × "
                f"{batch.shape[1]} {batch.dtype}). Found {type(error).__name__}: {message}"
            ) from error
        if not self._zipmap:
            return np.asarray(result)[:rows]
        records: Sequence[dict[Any, float]] = result[:rows]
        keys = list(self.classes or ())
        return np.array([[record[key] for key in keys] for record in records], dtype=np.float64)


class OnnxLoader:
    """Loads ``.onnx`` files with onnxruntime's CPU execution provider."""

    name = "onnx"
    suffixes: tuple[str, ...] = (".onnx",)

    def load(
        self, path: Path, *, outputs: OutputKind | None = None, trust: bool = False
    ) -> OnnxModel:
        """Open ``path``; ``trust`` is not needed (an ONNX graph runs no Python code)."""
        outputs = check_outputs_argument(outputs)
        path = Path(path)
        onnx = import_optional("onnx", loader=self.name)
        ort = import_optional("onnxruntime", loader=self.name)
        try:
            payload = path.read_bytes()
        except OSError as error:
            raise InputFileError(
                f"the model file must be readable. Found {path}: {error.strerror or error}."
            ) from None
        try:
            proto = onnx.load_model_from_string(payload)
            options = ort.SessionOptions()
            options.log_severity_level = 3
            session = ort.InferenceSession(
                payload, sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as error:
            first = (str(error).strip().splitlines() or [""])[0][:200]
            raise InputFileError(
                f"the model file must be a valid ONNX model. Found {path} "
                f"({type(error).__name__}: {first})."
            ) from None
        inputs = session.get_inputs()
        shape = list(inputs[0].shape) if len(inputs) == 1 else []
        if len(inputs) != 1 or len(shape) != 2:
            described = ", ".join(f"{i.name} {i.type} {list(i.shape)}" for i in inputs)
            raise InputFileError(
                f"the ONNX model must take one 2-D input (records × features). Found {path} "
                f"with inputs: {described}."
            )
        (feed,) = inputs
        if feed.type not in _DTYPES:
            raise InputFileError(
                f"the ONNX model's input must be a numeric tensor. Found {feed.type} in {path}."
            )
        candidates = [o for o in session.get_outputs() if _is_prediction_output(o.type)]
        if len(candidates) > 1:
            named = [o for o in candidates if "prob" in o.name.lower()]
            candidates = named if len(named) == 1 else candidates
        if len(candidates) != 1:
            described = ", ".join(f"{o.name} {o.type}" for o in session.get_outputs())
            raise InputFileError(
                f"the ONNX model must have exactly one float output holding the predictions "
                f"(or one named like 'probabilities'). Found {path} with outputs: {described}."
            )
        (chosen,) = candidates
        others = [o for o in session.get_outputs() if o.name != chosen.name]
        label = next((o.name for o in others if not _is_prediction_output(o.type)), None)
        classes = _class_labels(proto, label) if label is not None else None
        if classes is None:
            classes = _recorded_classes(proto, path)
        zipmap = chosen.type.startswith("seq(")
        if zipmap and classes is None:
            raise InputFileError(
                f"the ONNX model's ZipMap output must state its class labels. Found {path} "
                f"without them."
            )
        width = shape[1] if isinstance(shape[1], int) and shape[1] > 0 else None
        fixed = isinstance(shape[0], int) and shape[0] > 0
        return OnnxModel(
            path,
            session,
            output_name=chosen.name,
            zipmap=zipmap,
            classes=classes,
            n_features=width,
            input_name=feed.name,
            input_dtype=_DTYPES[feed.type],
            batch_size=shape[0] if fixed else DEFAULT_BATCH_SIZE,
            fixed_batch=fixed,
            outputs=outputs,
        )
