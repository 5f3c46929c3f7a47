"""Exposing what a classifier's graph computes but does not output: the probability table
that an exporter split into one output per class, and the pre-activation scores, for exact
losses.

skl2onnx's ``zipmap="columns"`` option replaces the probability output by one output per
class, each a column of the classifier's ``(n, K)`` probabilities (a ``Slice`` or an
``ArrayFeatureExtractor`` of it, reshaped). :func:`expose_class_columns` finds that table
when the outputs are its columns 0 … K−1, in order, and makes it a graph output.

A graph whose probabilities come from a final ``Softmax``, ``Sigmoid`` or an
``ai.onnx.ml`` ``LinearClassifier`` with a ``LOGISTIC``/``SOFTMAX`` post-transform (what
skl2onnx writes for LogisticRegression), possibly followed by pass-through ops and a
``ZipMap``, rounds its probabilities to float32: probabilities near 1 become 1 and the
logit loss saturates at ±36.04. The scores *before* the activation are finite logits. Here
they are made an extra graph output (in memory; nothing is written to disk), and
:func:`logits_matching` checks on real outputs that the activation of those scores
reproduces the probabilities before the loader uses them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit, softmax

__all__ = [
    "PROBABILITY_TOLERANCE",
    "Exposure",
    "expose_class_columns",
    "expose_preactivation",
    "logits_matching",
]

PROBABILITY_TOLERANCE: Final = 1e-5
"""Absolute tolerance between the recomputed and the graph's float32 probabilities."""

_PASS_THROUGH: Final = (
    "Identity", "Reshape", "Cast", "Squeeze", "Flatten", "Unsqueeze", "ZipMap", "Normalizer",
)  # fmt: skip
_ACTIVATIONS: Final = ("Softmax", "Sigmoid")
_EXPOSED: Final = "epsstar_preactivation"


@dataclass(frozen=True, slots=True)
class Exposure:
    """The extra output ``name`` holding the scores before ``activation``."""

    name: str
    activation: str


def _final_activation(graph: Any, output: str) -> Any | None:
    """The activation node the probabilities ``output`` come from, through pass-throughs."""
    producers = {name: node for node in graph.node for name in node.output}
    current = producers.get(output)
    for _ in range(len(graph.node)):
        if current is None:
            return None
        if current.op_type in _ACTIVATIONS:
            return current
        if current.op_type == "LinearClassifier":
            return current
        if current.op_type not in _PASS_THROUGH:
            return None
        current = producers.get(current.input[0])
    return None


def _elem_type(proto: Any, name: str) -> int:
    """The element type shape inference gives the tensor ``name`` (float when unknown)."""
    from onnx import TensorProto, shape_inference

    try:
        inferred = shape_inference.infer_shapes(proto).graph
    except Exception:
        return int(TensorProto.FLOAT)
    for info in (*inferred.value_info, *inferred.output, *inferred.input):
        if info.name == name and info.type.tensor_type.elem_type:
            return int(info.type.tensor_type.elem_type)
    return int(TensorProto.FLOAT)


def _post_transform(node: Any) -> str:
    from onnx import helper

    for attribute in node.attribute:
        if attribute.name == "post_transform":
            value = helper.get_attribute_value(attribute)
            return value.decode() if isinstance(value, bytes) else str(value)
    return "NONE"


def expose_preactivation(proto: Any, output: str) -> Exposure | None:
    """Add the pre-activation scores of ``output`` as a graph output of ``proto`` (in place).

    None when ``output`` does not come from a recognised final activation.
    """
    from onnx import TensorProto, helper

    graph = proto.graph
    node = _final_activation(graph, output)
    if node is None:
        return None
    if node.op_type == "LinearClassifier":
        transform = _post_transform(node)
        if transform not in ("LOGISTIC", "SOFTMAX"):
            return None
        raw = helper.make_node(
            "LinearClassifier",
            list(node.input),
            [f"{_EXPOSED}_label", _EXPOSED],
            domain=node.domain,
            name=f"{_EXPOSED}_node",
        )
        for attribute in node.attribute:
            if attribute.name != "post_transform":
                raw.attribute.append(attribute)
        raw.attribute.append(helper.make_attribute("post_transform", "NONE"))
        graph.node.append(raw)
        name, activation = _EXPOSED, transform
    else:
        name, activation = node.input[0], node.op_type
    if name not in {o.name for o in graph.output}:
        elem_type = TensorProto.FLOAT if name == _EXPOSED else _elem_type(proto, name)
        graph.output.append(helper.make_tensor_value_info(name, elem_type, None))
    return Exposure(name, activation)


_RESHAPES: Final = ("Identity", "Reshape", "Cast", "Squeeze", "Flatten", "Unsqueeze")


def _constant_ints(graph: Any, name: str) -> list[int] | None:
    """The values of the integer initializer ``name``, or None when it is not one."""
    from onnx import numpy_helper

    for init in graph.initializer:
        if init.name == name:
            values = numpy_helper.to_array(init).reshape(-1)
            return [int(v) for v in values] if values.dtype.kind in "iu" else None
    return None


def _column_of(graph: Any, output: str) -> tuple[str, int] | None:
    """The table and the column index that ``output`` is, through reshapes, or None."""
    from onnx import helper

    producers = {name: node for node in graph.node for name in node.output}
    current = producers.get(output)
    for _ in range(len(graph.node)):
        if current is None:
            return None
        inputs = list(current.input)
        if current.op_type in _RESHAPES:
            current = producers.get(inputs[0])
            continue
        if current.op_type == "Slice" and len(inputs) >= 3:
            starts, ends = _constant_ints(graph, inputs[1]), _constant_ints(graph, inputs[2])
            axes = _constant_ints(graph, inputs[3]) if len(inputs) > 3 and inputs[3] else [1]
            steps = _constant_ints(graph, inputs[4]) if len(inputs) > 4 and inputs[4] else [1]
            if starts is None or ends is None or axes not in ([1], [-1]) or steps != [1]:
                return None
            if len(starts) == 1 and ends == [starts[0] + 1] and starts[0] >= 0:
                return inputs[0], starts[0]
            return None
        if current.op_type in ("ArrayFeatureExtractor", "Gather") and len(inputs) == 2:
            axis = [helper.get_attribute_value(a) for a in current.attribute if a.name == "axis"]
            index = _constant_ints(graph, inputs[1])
            along = current.op_type == "ArrayFeatureExtractor" or axis in ([1], [-1])
            if along and index is not None and len(index) == 1 and index[0] >= 0:
                return inputs[0], index[0]
        return None
    return None


def expose_class_columns(proto: Any, outputs: list[str]) -> str | None:
    """The ``(n, K)`` table whose columns 0 … K−1 the float ``outputs`` are, in order, made
    a graph output of ``proto`` (in place); None when they are not such columns."""
    from onnx import helper

    if len(outputs) < 2:
        return None
    columns = [_column_of(proto.graph, output) for output in outputs]
    tables = {column[0] for column in columns if column is not None}
    if None in columns or len(tables) != 1:
        return None
    if [column[1] for column in columns if column is not None] != list(range(len(outputs))):
        return None
    table = tables.pop()
    if table not in {o.name for o in proto.graph.output}:
        elem_type = _elem_type(proto, table)
        proto.graph.output.append(helper.make_tensor_value_info(table, elem_type, None))
    return table


def _columns(values: NDArray[Any]) -> NDArray[np.float64]:
    array = np.asarray(values, dtype=np.float64)
    return array.reshape(array.shape[0], -1)


def logits_matching(scores: Any, probabilities: Any) -> NDArray[np.float64] | None:
    """Float64 logits whose softmax (or sigmoid, for one column) gives ``probabilities``.

    Tried in turn: the scores are softmax logits of the same width; a single column of
    log-odds (``σ(z) = p``, or ``σ(z) = p₁`` with two probability columns); the last of
    several score columns is the log-odds of the second of two classes. None when no
    reading reproduces the probabilities within :data:`PROBABILITY_TOLERANCE`.
    """
    z, p = _columns(scores), _columns(probabilities)
    if z.shape[0] != p.shape[0] or not np.all(np.isfinite(z)):
        return None

    def close(recomputed: NDArray[Any], wanted: NDArray[Any]) -> bool:
        return bool(np.max(np.abs(recomputed - wanted), initial=0.0) <= PROBABILITY_TOLERANCE)

    if z.shape == p.shape and p.shape[1] >= 2 and close(softmax(z, axis=1), p):
        return z
    last = z[:, -1]
    if p.shape[1] == 1 and z.shape[1] == 1 and close(expit(last), p[:, 0]):
        return last
    if p.shape[1] == 2 and close(expit(last), p[:, 1]) and close(expit(-last), p[:, 0]):
        return last
    return None
