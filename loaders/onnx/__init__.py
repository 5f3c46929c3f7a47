"""ONNX models, run with onnxruntime on the CPU.

Covers the two common producers:

* classifiers converted by skl2onnx, with a label output and a probability output,
  either a tensor ``(n, K)`` or, with ZipMap, a list of ``{class: probability}`` dicts
  (turned into an ``(n, K)`` array in class order), or, with ``zipmap="columns"``, one
  output per class, read from the table they are the columns of (:mod:`.onnx_graph`).
  The class labels come from the ZipMap or classifier node's ``classlabels_*``
  attribute, or from the constant table the label output is looked up in. With two
  classes the loader returns one value per record, ``P(y = classes[1])``;
* networks exported by ``torch.onnx.export`` (or written by hand, or by ``epsstar
  train``) with one float output: logits or probabilities, detected by the rule of
  :mod:`epsstar.loaders` unless ``outputs=`` says. Their class labels, if the exporter
  recorded them, come from the ``metadata_props`` entry
  :data:`epsstar.audit.model.class_labels.CLASSES_KEY` (a JSON array, in output-column order).

The model is opened by path: external data (``model.onnx.data``) are resolved beside the
model file, never in the working directory, and hashed with it (:mod:`.onnx_files`). Its
inputs may be one 2-D input (records × features), one input per column or group of
columns (skl2onnx's DataFrame conversion), or one N-D input (images), each cast to its
declared element type (:mod:`.onnx_inputs`). The input width, when the graph fixes it, is
:attr:`n_features`; a fixed batch dimension sets the chunk size.

Exact losses: an output named ``logits`` is used when present, and so is a float output
whose Softmax/Sigmoid is the graph's other float output (``return logits, probabilities``:
the output reading names both); otherwise, when the
probabilities come from a final Softmax/Sigmoid (or a LinearClassifier's post-transform),
the scores before it are exposed and used as float64 logits once a probe shows that they
reproduce the probabilities (:mod:`.onnx_graph`). ``outputs="probabilities"`` keeps the
probabilities.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.model.class_labels import (
    CLASSES_KEY,
    FEATURES_KEY,
    classes_from_text,
    features_from_text,
)
from epsstar.audit.model.declared_privacy import PRIVACY_KEY, DeclaredPrivacy, privacy_from_text
from epsstar.audit.model.features import Features, as_features
from epsstar.audit.model.output_reading import OutputReading
from epsstar.audit.model.plugins import OutputKind, import_optional
from epsstar.exceptions import InputFileError, InvalidInputError
from epsstar.plumbing.runtime.threads import chosen_threads

from .. import DEFAULT_BATCH_SIZE, BatchedModel, check_outputs_argument, first_line
from .files import read_model
from .graph import (
    PROBABILITY_TOLERANCE,
    Exposure,
    expose_class_columns,
    expose_preactivation,
    logits_matching,
)
from .inputs import InputLayout, layout_of

__all__ = ["OnnxLoader", "OnnxModel", "feature_inputs"]

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


def _recorded_features(proto: Any, path: Path) -> tuple[str, ...] | None:
    """Input column names an exporter recorded in the model's metadata, if any."""
    for prop in proto.metadata_props:
        if prop.key == FEATURES_KEY:
            return features_from_text(prop.value, path)
    return None


def _declared_privacy(proto: Any, path: Path) -> DeclaredPrivacy | None:
    """The DP guarantee an exporter recorded in the model's metadata, if any."""
    for prop in proto.metadata_props:
        if prop.key == PRIVACY_KEY:
            return privacy_from_text(prop.value, path)
    return None


class OnnxModel(BatchedModel):
    """An ONNX graph ready to predict (see the module docstring)."""

    def __init__(
        self,
        path: Path,
        session: Any,
        *,
        files: tuple[Path, ...],
        layout: InputLayout,
        output_name: str,
        zipmap: bool,
        classes: tuple[object, ...] | None,
        feature_names: tuple[str, ...] | None,
        exposure: Exposure | None,
        logits_output: str | None,
        batch_size: int,
        fixed_batch: bool,
        outputs: OutputKind | None,
        declared_privacy: DeclaredPrivacy | None = None,
    ) -> None:
        self._session = session
        self._files = files
        self._layout = layout
        self._fixed_batch = batch_size if fixed_batch else 0
        self._output_name = logits_output or output_name
        self._zipmap = zipmap and logits_output is None
        self._feature_names = feature_names
        self._exposure = exposure if logits_output is None else None
        self._exposed_ok: bool | None = None
        dtypes = {spec.dtype for spec in layout.inputs}
        self._single_dtype = len(dtypes) == 1 and np.dtype(layout.first.dtype).kind != "O"
        super().__init__(
            path,
            n_features=layout.n_features,
            classes=classes,
            outputs="logits" if logits_output is not None and outputs is None else outputs,
            input_dtype=layout.first.dtype if self._single_dtype else np.float64,
            batch_size=batch_size,
            binary_columns=classes is not None,
            declared_privacy=declared_privacy,
        )
        if logits_output is not None and outputs is None:
            reason = f"the graph's output named {logits_output!r}"
            if logits_output.lower() != "logits":
                reason = (
                    f"the graph's output {logits_output!r}, whose activation is its other "
                    f"output {output_name!r}"
                )
            self._reading = OutputReading("logits", "loader", reason)

    @property
    def input_dtype(self) -> np.dtype[Any] | None:
        """The one type every input takes, or None when the inputs differ (each is cast and
        checked column by column)."""
        return self._input_dtype if self._single_dtype else None

    @property
    def feature_names(self) -> tuple[str, ...] | None:
        return self._feature_names

    @property
    def takes_text(self) -> bool:
        """Whether an input is a string tensor (skl2onnx's per-column pipelines)."""
        return any(np.dtype(spec.dtype).kind == "O" for spec in self._layout.inputs)

    @property
    def files(self) -> tuple[Path, ...]:
        return self._files

    def predict(self, features: Features | NDArray[Any]) -> NDArray[np.float64]:
        first = self._kind is None and self._exposure is not None
        if first:  # no probe: check the exposed scores on the first batch
            records = as_features(features)
            self._run_all(records.slice(0, min(records.rows, self._batch_size)))
            if self._exposed_ok:
                self._reading = self._exposed_reading("the first batch of records")
                self._kind = self._reading.kind
        output = super().predict(features)
        if first and not self._exposed_ok and self._reading is not None:
            self._reading = self._with_failed_check(self._reading, "the first batch of records")
        return output

    def _probe_features(self) -> Features | None:
        if self._layout.kind == "matrix":
            return super()._probe_features()
        return self._layout.probe()

    def _probe(self) -> OutputReading | None:
        reading = super()._probe()
        if reading is None or self._exposure is None or self._exposed_ok is None:
            return reading
        if not self._exposed_ok:
            return self._with_failed_check(reading, "the detection probe")
        return self._exposed_reading("the detection probe")

    def _exposed_reading(self, where: str) -> OutputReading:
        assert self._exposure is not None
        return OutputReading(
            "logits",
            "loader",
            f"the scores before the final {self._exposure.activation} of output "
            f"{self._output_name!r}, exposed from the graph in float64; on {where} they "
            f"reproduce its probabilities within {PROBABILITY_TOLERANCE:g}",
        )

    def _with_failed_check(self, reading: OutputReading, where: str) -> OutputReading:
        """The reading of the output itself, saying why the exposed scores are not used."""
        assert self._exposure is not None
        note = (
            f"; output {self._output_name!r} is used as it is: the scores before its final "
            f"{self._exposure.activation} did not reproduce it within "
            f"{PROBABILITY_TOLERANCE:g} on {where}"
        )
        return replace(reading, reason=reading.reason + note)

    def _prepare(self, features: Features) -> Any:
        if self._layout.kind == "matrix":
            return self._matrix(features)
        return self._layout.feed(features)

    def _run_batch(self, prepared: dict[str, NDArray[Any]] | NDArray[Any]) -> NDArray[Any]:
        """Run one chunk: a matrix for the one 2-D input, or the arrays of every input."""
        batch = prepared if isinstance(prepared, dict) else {self._layout.first.name: prepared}
        rows = next(iter(batch.values())).shape[0]
        if self._fixed_batch and rows < self._fixed_batch:  # pad the last chunk
            pad = self._fixed_batch - rows
            batch = {k: np.concatenate([v, np.repeat(v[-1:], pad, 0)]) for k, v in batch.items()}
        exposed = self._exposure is not None and self._exposed_ok is not False
        names = [self._output_name] + ([self._exposure.name] if exposed and self._exposure else [])
        try:
            results = self._session.run(names, batch)
        except Exception as error:
            shapes = ", ".join(f"{k} {v.shape} {v.dtype}" for k, v in batch.items())
            raise InvalidInputError(
                f"the model in {self.source} must accept the features ({shapes}). "
                f"Found {type(error).__name__}: {first_line(error)}"
            ) from error
        probabilities = self._as_array(results[0], rows)
        if not exposed:
            return probabilities
        logits = logits_matching(np.asarray(results[1])[:rows], probabilities)
        if self._exposed_ok is None:
            self._exposed_ok = logits is not None
            return probabilities if logits is None else logits
        if logits is None:
            raise InvalidInputError(
                f"the scores before the final activation of {self.source} must reproduce its "
                f"probabilities, as they did on the probe; pass outputs='probabilities' to use "
                f"the probabilities. Found a batch of {rows} records where they do not."
            )
        return logits

    def _as_array(self, result: Any, rows: int) -> NDArray[Any]:
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
        import_optional("onnx", loader=self.name)
        ort = import_optional("onnxruntime", loader=self.name)
        proto, files = read_model(path)
        table = expose_class_columns(proto, _float_outputs(proto))
        session = _session(ort, proto, path)
        layout = layout_of(feature_inputs(session.get_inputs(), proto), path)
        chosen, logits_output = _prediction_output(session, path, outputs, proto, table)
        others = [o for o in session.get_outputs() if o.name != chosen.name]
        label = next((o.name for o in others if not _is_prediction_output(o.type)), None)
        classes = _class_labels(proto, label) if label is not None else None
        if classes is None:
            classes = _recorded_classes(proto, path)
        zipmap = chosen.type.startswith("seq(")
        if zipmap and classes is None and logits_output is None:
            raise InputFileError(
                f"the ONNX model's ZipMap output must state its class labels. Found {path} "
                f"without them."
            )
        exposure = None
        if outputs != "probabilities" and logits_output is None:
            exposure = expose_preactivation(proto, chosen.name)
            if exposure is not None:
                session = _session(ort, proto, path)
        batch = layout.first.shape[0]
        return OnnxModel(
            path,
            session,
            files=files,
            layout=layout,
            output_name=chosen.name,
            zipmap=zipmap,
            classes=classes,
            feature_names=_feature_names(proto, layout, path),
            exposure=exposure,
            logits_output=logits_output,
            batch_size=batch or DEFAULT_BATCH_SIZE,
            fixed_batch=batch is not None,
            outputs=outputs,
            declared_privacy=_declared_privacy(proto, path),
        )


def feature_inputs(inputs: list[Any], proto: Any) -> list[Any]:
    """The graph inputs that take records: those that are not also initializers.

    Older exporters (tf2onnx, ONNX IR version < 4) list every initializer among the graph
    inputs too; such an input has a default value and is a weight, not a column of the
    data. onnxruntime leaves them out of ``get_inputs()`` in the versions tested, and this
    keeps them out whatever the runtime reports.
    """
    constants = {init.name for init in proto.graph.initializer}
    constants |= {init.values.name for init in proto.graph.sparse_initializer}
    return [node for node in inputs if node.name not in constants]


def _session(ort: Any, proto: Any, path: Path) -> Any:
    """An onnxruntime session of ``proto`` (external data already loaded into it)."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    threads = chosen_threads()
    if threads is not None:  # the audit's choice (epsstar.plumbing.runtime.threads)
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    try:
        return ort.InferenceSession(
            proto.SerializeToString(), sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as error:
        raise InputFileError(
            f"the model file must be a valid ONNX model. Found {path} "
            f"({type(error).__name__}: {first_line(error)})."
        ) from None


_ACTIVATIONS = frozenset({"Softmax", "Sigmoid"})


def _activation_pair(proto: Any, candidates: list[Any]) -> tuple[Any, Any] | None:
    """Two float outputs of which one is the Softmax/Sigmoid of the other (an exporter's
    ``return logits, softmax(logits)``): the probabilities and the scores, else ``None``."""
    if len(candidates) != 2:
        return None
    producers = {name: node for node in proto.graph.node for name in node.output}
    for activated, scores in (candidates, candidates[::-1]):
        node = producers.get(activated.name)
        if node is not None and node.op_type in _ACTIVATIONS and node.input[0] == scores.name:
            return activated, scores
    return None


def _float_outputs(proto: Any) -> list[str]:
    """The graph's outputs of floating-point tensors, in order."""
    from onnx import TensorProto

    floats = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16)
    return [
        o.name
        for o in proto.graph.output
        if o.type.HasField("tensor_type") and o.type.tensor_type.elem_type in floats
    ]


def _prediction_output(
    session: Any, path: Path, outputs: OutputKind | None, proto: Any, table: str | None
) -> tuple[Any, str | None]:
    """The probabilities (or only) output, and the logits beside them if any: an output
    named ``logits``, or the scores a Softmax/Sigmoid output is computed from. ``table`` is
    the probability table exposed from one output per class, which is the output then."""
    if table is not None:
        return next(o for o in session.get_outputs() if o.name == table), None
    candidates = [o for o in session.get_outputs() if _is_prediction_output(o.type)]
    pair = _activation_pair(proto, candidates)
    if pair is not None:
        probabilities, scores = pair
        return probabilities, None if outputs == "probabilities" else scores.name
    logits = next((o for o in candidates if o.name.lower() == "logits"), None)
    if len(candidates) > 1:
        named = [o for o in candidates if "prob" in o.name.lower()]
        tensors = [o for o in named if not o.type.startswith("seq(")]
        candidates = tensors[:1] if tensors else named if len(named) == 1 else candidates
    if len(candidates) != 1:
        described = ", ".join(f"{o.name} {o.type}" for o in session.get_outputs())
        raise InputFileError(
            f"the ONNX model must have exactly one float output holding the predictions "
            f"(or one named like 'probabilities'). Found {path} with outputs: {described}."
        )
    use_logits = logits is not None and outputs != "probabilities" and logits != candidates[0]
    return candidates[0], logits.name if use_logits and logits is not None else None


def _feature_names(proto: Any, layout: InputLayout, path: Path) -> tuple[str, ...] | None:
    """The input names of a one-column-per-input graph, or the exporter's recorded names."""
    if layout.column_names is not None:
        return layout.column_names
    recorded = _recorded_features(proto, path)
    if recorded is None or layout.kind != "matrix":
        return None
    width = layout.first.width
    if width is not None and width != len(recorded):
        raise InputFileError(
            f"{path}: the {FEATURES_KEY!r} metadata must name one column per input feature "
            f"({width}); re-export the model with matching names. Found {len(recorded)} names."
        )
    return recorded
