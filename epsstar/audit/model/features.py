"""The feature columns of a batch of records, typed and named, as a model receives them.

A :class:`Features` holds one array per column, in order, each with one entry per record:

* a **scalar column** is 1-D: float, integer, boolean, or text (an object array of ``str``);
  for a model that handles missing values, a missing number is NaN and a missing text NaN
  in the object array;
* a **tensor column** is N-D, ``(rows, *shape)``: an image ``(rows, 1, 8, 8)`` read whole
  from an NPZ array.

The table reader (:mod:`epsstar.audit.data.tables`) builds them with the column types of the file;
the audit hands them to :meth:`epsstar.audit.model.plugins.LoadedModel.predict` named the way the
model names its inputs when it records names (``feature_names_in_``, ONNX input names,
the names an exporter recorded), or with the file's names when it matches them by position.
Each loader takes the form it needs: :meth:`Features.matrix` (numbers, ``(rows, d)``),
:meth:`Features.frame` (a pandas DataFrame with the types kept), :meth:`Features.tensor`
(``(rows, *shape)``) or the columns one by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import DTypeLike, NDArray

from epsstar.exceptions import InsufficientDataError, InvalidInputError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["Features", "as_features", "is_numeric_dtype"]

_NUMERIC = "biuf"


def is_numeric_dtype(dtype: np.dtype[Any]) -> bool:
    """Booleans, integers and floats: what a numeric model input may be cast from."""
    return dtype.kind in _NUMERIC


@dataclass(frozen=True, slots=True)
class Features:
    """Named, typed feature columns of ``rows`` records (see the module docstring)."""

    names: tuple[str, ...]
    columns: tuple[NDArray[Any], ...]
    #: The columns of one narrow type stacked into rows, once for every model that reads
    #: this batch (the target and its reference models): see :meth:`matrix`.
    _stacked: list[NDArray[Any]] = field(
        default_factory=list, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        if len(self.names) != len(self.columns) or not self.names:
            raise InvalidInputError(
                f"features must have one name per column and at least one column. Found "
                f"{len(self.names)} names for {len(self.columns)} columns."
            )
        rows = {int(column.shape[0]) if column.ndim else -1 for column in self.columns}
        if len(rows) != 1 or -1 in rows:
            raise InvalidInputError(
                f"feature columns must all have one entry per record. Found lengths {sorted(rows)}."
            )

    # ------------------------------------------------------------------ building

    @classmethod
    def from_matrix(cls, matrix: Any, names: Sequence[str] | None = None) -> Features:
        """A 2-D array as one scalar column per feature (named ``names`` or ``x0, x1, …``);
        an array of three or more dimensions as one tensor column (named ``names[0]`` or
        ``"X"``)."""
        try:
            array = np.asarray(matrix)
        except (TypeError, ValueError):
            raise InvalidInputError(
                f"features must be an array of records. Found {type(matrix).__name__}."
            ) from None
        if array.ndim < 2:
            raise InvalidInputError(
                f"features must be a 2-D array (records × features) or a tensor (records × …). "
                f"Found shape {array.shape}."
            )
        if array.ndim > 2:
            name = names[0] if names else "X"
            return cls((str(name),), (array,))
        labels = [f"x{j}" for j in range(array.shape[1])] if names is None else list(names)
        if len(labels) != array.shape[1]:
            raise InvalidInputError(
                f"features must have one name per column. Found {len(labels)} names for "
                f"{array.shape[1]} columns."
            )
        return cls(tuple(str(n) for n in labels), tuple(array[:, j] for j in range(array.shape[1])))

    @classmethod
    def from_frame(cls, frame: pd.DataFrame) -> Features:
        """The columns of a DataFrame, with their types (text as an object array of ``str``)."""
        return cls(
            tuple(str(name) for name in frame.columns),
            tuple(frame[name].to_numpy() for name in frame.columns),
        )

    @staticmethod
    def concatenate(parts: Sequence[Features]) -> Features:
        """The rows of ``parts`` one after the other (same names, same order)."""
        first = parts[0]
        if len(parts) == 1:
            return first
        return Features(
            first.names,
            tuple(
                np.concatenate([part.columns[j] for part in parts]) for j in range(len(first.names))
            ),
        )

    # ------------------------------------------------------------------- reading

    @property
    def rows(self) -> int:
        """The number of records."""
        return int(self.columns[0].shape[0])

    def __len__(self) -> int:
        return self.rows

    @property
    def width(self) -> int:
        """The number of columns (a tensor column counts once)."""
        return len(self.names)

    @property
    def is_tensor(self) -> bool:
        """Whether this is a single tensor column (N-D records)."""
        return len(self.columns) == 1 and self.columns[0].ndim > 1

    @property
    def record_shape(self) -> tuple[int, ...]:
        """The shape of one record: ``(width,)``, or a tensor column's ``shape[1:]``."""
        if self.is_tensor:
            return tuple(int(n) for n in self.columns[0].shape[1:])
        return (self.width,)

    @property
    def is_numeric(self) -> bool:
        """Whether every column holds numbers or booleans."""
        return all(is_numeric_dtype(column.dtype) for column in self.columns)

    def column(self, name: str) -> NDArray[Any]:
        """The column called ``name``."""
        try:
            return self.columns[self.names.index(name)]
        except ValueError:
            raise InvalidInputError(
                f"features must have a column {name!r}. Found {', '.join(self.names[:10])}."
            ) from None

    def rename(self, names: Sequence[str]) -> Features:
        """The same columns under ``names`` (one per column, in order)."""
        renamed = Features(tuple(str(n) for n in names), self.columns)
        object.__setattr__(renamed, "_stacked", self._stacked)  # the same rows
        return renamed

    def slice(self, start: int, stop: int) -> Features:
        """Records ``start`` to ``stop`` (views, not copies; all of them: these features)."""
        if start <= 0 and stop >= self.rows:
            return self
        return Features(self.names, tuple(column[start:stop] for column in self.columns))

    def matrix(self, dtype: DTypeLike | None = None) -> NDArray[Any]:
        """The records as a C-contiguous ``(rows, d)`` numeric array.

        Scalar columns become the matrix's columns; a tensor column is flattened to
        ``(rows, prod(shape))``. ``dtype`` defaults to float32 when every column is
        float32, else float64. A text column is refused, naming it.
        """
        if self.is_tensor:
            tensor = self.columns[0]
            self._require_numeric()
            flat = tensor.reshape(tensor.shape[0], -1)
            return np.ascontiguousarray(flat, dtype=dtype or self._common_float())
        self._require_numeric()
        for name, column in zip(self.names, self.columns, strict=True):
            if column.ndim != 1:
                raise InvalidInputError(
                    f"features must be scalar columns to form a matrix; column {name!r} holds "
                    f"records of shape {column.shape[1:]}. Found {len(self.names)} columns."
                )
        target = np.dtype(dtype or self._common_float())
        kinds = {column.dtype for column in self.columns}
        if len(kinds) == 1 and next(iter(kinds)).itemsize < target.itemsize:
            # Columns of one narrower type (bytes, booleans, small integers) are stacked as
            # they are and then cast: the same values, with fewer bytes moved in the
            # column-to-row transposition, which dominates for wide tables. The stacked rows
            # are kept for the next model that reads this batch (an audit's reference models
            # read the target's); each call casts them into an array of its own.
            if not self._stacked:
                self._stacked.append(np.stack(self.columns, axis=1))
            return self._stacked[0].astype(target)
        out = np.empty((self.rows, self.width), dtype=target)
        for j, column in enumerate(self.columns):
            out[:, j] = column
        return out

    def tensor(self, shape: Sequence[int], dtype: DTypeLike | None = None) -> NDArray[Any]:
        """The records as ``(rows, *shape)``: a tensor column or the matrix, reshaped.

        Refused, with both shapes named, when a record does not hold ``prod(shape)`` values.
        """
        wanted = tuple(int(n) for n in shape)
        flat = self.matrix(dtype)
        size = int(np.prod(wanted)) if wanted else 1
        if flat.shape[1] != size:
            raise InvalidInputError(
                f"each record must hold {size} values to take the shape {wanted}. Found "
                f"{flat.shape[1]} values per record (shape {self.record_shape})."
            )
        return flat.reshape((self.rows, *wanted))

    def frame(self) -> pd.DataFrame:
        """The scalar columns as a pandas DataFrame, types kept, columns named :attr:`names`."""
        import pandas as pd

        if self.is_tensor:
            raise InvalidInputError(
                f"features must be scalar columns to form a table. Found a tensor column "
                f"{self.names[0]!r} of records shaped {self.record_shape}."
            )
        return pd.DataFrame(dict(zip(self.names, self.columns, strict=True)), copy=False)

    def _common_float(self) -> type[np.floating[Any]]:
        if all(column.dtype == np.float32 for column in self.columns):
            return np.float32
        return np.float64

    def _require_numeric(self) -> None:
        for name, column in zip(self.names, self.columns, strict=True):
            if not is_numeric_dtype(column.dtype):
                first = column.reshape(-1)[0] if column.size else ""
                raise InvalidInputError(
                    f"feature column {name!r} must be numeric for this model, which takes a "
                    f"numeric array. Found {first!r} ({column.dtype})."
                )


def as_features(features: Features | Any) -> Features:
    """``features`` itself, or an array turned into :class:`Features` (at least one record)."""
    result = features if isinstance(features, Features) else Features.from_matrix(features)
    if result.rows == 0:
        raise InsufficientDataError("features needs at least 1 record. Found 0.")
    return result
