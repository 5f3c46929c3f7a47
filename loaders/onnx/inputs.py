"""How an ONNX graph's inputs take the features of a batch of records.

Three layouts:

* ``matrix`` — one 2-D input (records × features); :class:`~epsstar.loaders.BatchedModel`
  checks and casts the matrix as for any loader;
* ``columns`` — several inputs of shape ``[N]``, ``[N, 1]`` or ``[N, k]`` (skl2onnx's
  default conversion of a DataFrame gives one input per column). Each input takes its
  column(s) BY NAME when the features carry the input names, else the next ``k``
  columns in input order, cast to the input's element type (float, double, int64/int32,
  string, bool);
* ``tensor`` — one input of rank >= 3, ``[N, C, H, W]``: each record reshaped to the
  declared shape, dynamic non-batch dimensions taken from the data's record shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.model.features import Features
from epsstar.exceptions import InputFileError, InvalidInputError

__all__ = ["DTYPES", "InputLayout", "InputSpec", "layout_of"]

#: A numpy scalar type (``np.float32``, ...).
ScalarType: TypeAlias = type[np.generic]
#: The numpy scalar type of each ONNX tensor type an input may have.
DTYPES: Final[dict[str, ScalarType]] = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(float16)": np.float16,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(int16)": np.int16,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
    "tensor(string)": np.object_,
}

Layout = Literal["matrix", "columns", "tensor"]


@dataclass(frozen=True, slots=True)
class InputSpec:
    """One graph input: its name, ONNX type, numpy type and declared shape."""

    name: str
    type: str
    dtype: ScalarType
    shape: tuple[int | None, ...]

    @property
    def width(self) -> int | None:
        """Columns it takes in the ``columns`` layout (None when not fixed)."""
        if len(self.shape) == 1:
            return 1
        return self.shape[1]

    def describe(self) -> str:
        return f"{self.name} {self.type} {list(self.shape)}"


def _dim(value: object) -> int | None:
    return value if isinstance(value, int) and value > 0 else None


def _spec(node: Any, path: object) -> InputSpec:
    if node.type not in DTYPES:
        raise InputFileError(
            f"the ONNX model's inputs must be numeric, string or bool tensors. Found input "
            f"{node.name!r} of type {node.type} in {path}."
        )
    shape = tuple(_dim(d) for d in node.shape)
    return InputSpec(node.name, node.type, DTYPES[node.type], shape)


@dataclass(frozen=True, slots=True)
class InputLayout:
    """The graph's inputs and how features are fed to them (see the module docstring)."""

    kind: Layout
    inputs: tuple[InputSpec, ...]
    source: str

    @property
    def first(self) -> InputSpec:
        return self.inputs[0]

    @property
    def n_features(self) -> int | None:
        """The number of feature columns, when the graph fixes it (None for tensors)."""
        if self.kind == "tensor":
            return None
        widths = [spec.width for spec in self.inputs]
        return None if any(w is None for w in widths) else sum(w or 0 for w in widths)

    @property
    def column_names(self) -> tuple[str, ...] | None:
        """The input names, when every input takes exactly one column."""
        if self.kind == "columns" and all(spec.width == 1 for spec in self.inputs):
            return tuple(spec.name for spec in self.inputs)
        return None

    def feed(self, features: Features) -> dict[str, NDArray[Any]]:
        """The ``columns`` or ``tensor`` layout's input arrays for a batch of records."""
        if self.kind == "tensor":
            return {self.first.name: self._tensor(features)}
        return {spec.name: array for spec, array in self._columns(features)}

    def probe(self) -> Features | None:
        """The detection probe for the ``columns`` and ``tensor`` layouts, if shapes are fixed."""
        rng = np.random.default_rng(0)
        if self.kind == "tensor":
            dims = self.first.shape[1:]
            if any(d is None for d in dims):
                return None
            base = rng.standard_normal((16, *(d or 1 for d in dims)))
            zero = np.zeros((1, *base.shape[1:]))
            return Features(("X",), (np.concatenate([zero, base, 10 * base, 100 * base]),))
        if self.n_features is None:
            return None
        names, columns = [], []
        for spec in self.inputs:
            for j in range(spec.width or 0):
                names.append(spec.name if spec.width == 1 else f"{spec.name}[{j}]")
                columns.append(_probe_column(spec, rng))
        return Features(tuple(names), tuple(columns))

    def _tensor(self, features: Features) -> NDArray[Any]:
        declared = self.first.shape[1:]
        shape = list(declared)
        if features.is_tensor and len(features.record_shape) == len(declared):
            pairs = zip(declared, features.record_shape, strict=True)
            shape = [d if d is not None else r for d, r in pairs]
        if any(d is None for d in shape):
            raise InvalidInputError(
                f"the records must be tensors of rank {len(declared)} to fill the dynamic "
                f"dimensions of input {self.first.name!r} {list(declared)} of {self.source}; "
                f"pass --input-shape. Found records of shape {features.record_shape}."
            )
        return cast_column(features.tensor([d or 1 for d in shape]), self.first, "X", self.source)

    def _columns(self, features: Features) -> list[tuple[InputSpec, NDArray[Any]]]:
        if features.is_tensor:
            raise InvalidInputError(
                f"features must be scalar columns for the inputs of {self.source}. Found "
                f"records of shape {features.record_shape}."
            )
        by_name = all(spec.name in features.names for spec in self.inputs)
        total = self.n_features
        if not by_name and total is not None and features.width != total:
            raise InvalidInputError(
                f"features must have {total} columns, the inputs of {self.source} "
                f"({', '.join(s.describe() for s in self.inputs)}). Found {features.width}."
            )
        fed, start = [], 0
        for spec in self.inputs:
            if by_name:
                names = [spec.name]
            else:
                width = spec.width or features.width - start
                names = list(features.names[start : start + width])
                start += width
            parts = [cast_column(features.column(n), spec, n, self.source) for n in names]
            array = np.stack(parts, axis=1)
            fed.append((spec, array if len(spec.shape) == 2 else array[:, 0]))
        return fed


def _probe_column(spec: InputSpec, rng: np.random.Generator) -> NDArray[Any]:
    kind = np.dtype(spec.dtype).kind
    if kind in "biuO":
        values = rng.integers(0, 2, size=49)
        return values.astype(str).astype(object) if kind == "O" else values
    base = rng.standard_normal(16)
    return np.concatenate([[0.0], base, 10 * base, 100 * base])


def cast_column(column: NDArray[Any], spec: InputSpec, name: str, source: str) -> NDArray[Any]:
    """``column`` as ``spec``'s element type; refusals name the input, its type and the column."""
    target: np.dtype[Any] = np.dtype(spec.dtype)
    values = np.asarray(column)

    def refuse(need: str, found: object) -> InvalidInputError:
        found = found.item() if isinstance(found, np.generic) else found
        return InvalidInputError(
            f"column {name!r} must hold {need} for input {spec.name!r} ({spec.type}) of "
            f"{source}; check that it is the column the model takes (--features names them). "
            f"Found {found!r}."
        )

    if target.kind == "O":
        if values.dtype.kind in "OUS":
            return np.array([str(v) for v in values.reshape(-1)], dtype=object).reshape(
                values.shape
            )
        return values.astype(str).astype(object)
    if values.dtype.kind in "OUS":
        raise refuse("numbers", values.reshape(-1)[0] if values.size else values.dtype)
    if target.kind == "b":
        if values.dtype.kind != "b" and not np.isin(values, (0, 1)).all():
            raise refuse("booleans or 0/1", values[~np.isin(values, (0, 1))].reshape(-1)[0])
        return values.astype(bool)
    if target.kind in "iu":
        if values.dtype.kind == "f":
            bad = ~np.isfinite(values) | (values != np.round(values))
            if bad.any():
                raise refuse("whole numbers", values[bad].reshape(-1)[0])
        info = np.iinfo(target)
        wide = values.astype(np.float64)
        outside = (wide < float(info.min)) | (wide >= float(info.max) + 1.0)
        if outside.any():
            raise refuse(f"values that fit {target}", values[outside].reshape(-1)[0])
        return np.ascontiguousarray(values, dtype=target)
    if values.dtype.kind == "f" and values.dtype.itemsize > target.itemsize:
        huge = np.isfinite(values) & (np.abs(values) > float(np.finfo(target).max))
        if huge.any():
            raise refuse(f"values that fit {target}", values[huge].reshape(-1)[0])
    return np.ascontiguousarray(values, dtype=target)


def layout_of(session_inputs: Any, path: object) -> InputLayout:
    """The layout of a session's inputs; refuses graphs no layout fits, naming the inputs."""
    specs = tuple(_spec(node, path) for node in session_inputs)
    described = ", ".join(spec.describe() for spec in specs)
    ranks = {len(spec.shape) for spec in specs}
    if len(specs) == 1 and ranks == {2} and specs[0].type != "tensor(string)":
        return InputLayout("matrix", specs, str(path))
    if len(specs) == 1 and max(ranks) >= 3:
        return InputLayout("tensor", specs, str(path))
    if specs and ranks <= {1, 2}:
        return InputLayout("columns", specs, str(path))
    raise InputFileError(
        f"the ONNX model must take one 2-D input (records × features), one input per "
        f"column or group of columns ([N], [N, k]), or one N-D input ([N, C, H, W]). Found "
        f"{path} with inputs: {described}."
    )
