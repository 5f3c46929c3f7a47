"""How a model's outputs were read: probabilities or logits, and why.

The losses depend on the reading, so an audit records it (``output_reading`` in the
JSON). :func:`detect_reading` is the detection rule the built-in loaders apply to a
model's outputs on their probe (:mod:`epsstar.loaders`): probabilities when every value
is in ``[0, 1]`` and, with two or more columns, every row sums to 1; logits otherwise.
The rule is *ambiguous*, and the audit warns, when its evidence does not exclude the
other readings:

* logits because rows do not sum to 1 although every value is in ``[0, 1]``: per-class
  sigmoids or unnormalised scores look like this, and softmax turns them into other
  numbers;
* logits with every value in ``[-1, 1]``: a bounded score (``p − 0.5``, ``tanh``) is not a
  logit, and a logit model rarely stays that close to 0 on the probe's inputs scaled ×100.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from epsstar.plumbing.records.json_records import JsonRecord
from epsstar.statistics.losses import ROW_SUM_TOLERANCE
from epsstar.statistics.names import OutputKind

__all__ = ["BOUNDED_SCORE", "OutputReading", "ReadingSource", "detect_reading"]

#: Logits that all lie within ±BOUNDED_SCORE look like a bounded score rather than logits.
BOUNDED_SCORE = 1.0

ReadingSource = Literal["requested", "detected", "loader"]


@dataclass(frozen=True, slots=True)
class OutputReading(JsonRecord):
    """The reading of the model's outputs: ``kind``, who chose it, and why.

    ``source`` is ``"requested"`` (the caller's ``outputs``), ``"detected"`` (the rule of
    this module) or ``"loader"`` (the loader's own choice, e.g. ``predict_proba``);
    ``ambiguous`` says whether the evidence leaves the other reading possible.
    """

    kind: OutputKind
    source: ReadingSource
    reason: str
    ambiguous: bool = False

    def describe(self) -> str:
        """One line: the reading, why, and how to force it when it is ambiguous."""
        line = f"the model's outputs are read as {self.kind}: {self.reason}"
        if self.ambiguous:
            line += (
                "; the reading is ambiguous: pass --outputs logits or --outputs probabilities "
                "(outputs= in Python) to choose it"
            )
        return line


def detect_reading(values: NDArray[Any], where: str) -> OutputReading:
    """The detection rule applied to ``values`` (one column, or rows of class scores).

    ``where`` names the inputs the values came from, e.g. ``"the detection probe"``.
    """
    array = np.asarray(values, dtype=np.float64)
    if array.size == 0:
        return OutputReading("logits", "detected", f"no output on {where}", ambiguous=True)
    outside = (array < 0.0) | (array > 1.0) | ~np.isfinite(array)
    if outside.any():
        found = float(array[outside].flat[0])
        bounded = bool(np.all(np.abs(array) <= BOUNDED_SCORE))
        reason = f"a value on {where} is outside [0, 1] (found {found:.4g})"
        if bounded:
            reason += f", yet every value lies in [-{BOUNDED_SCORE:g}, {BOUNDED_SCORE:g}]"
        return OutputReading("logits", "detected", reason, ambiguous=bounded)
    if array.ndim == 2 and array.shape[1] >= 2:
        sums = array.sum(axis=1)
        off = np.abs(sums - 1.0) > ROW_SUM_TOLERANCE
        if off.any():
            found = float(sums[off][0])
            reason = (
                f"every value on {where} is in [0, 1] but rows do not sum to 1 "
                f"(found a row summing to {found:.4g})"
            )
            return OutputReading("logits", "detected", reason, ambiguous=True)
        reason = f"every value on {where} is in [0, 1] and every row sums to 1"
        return OutputReading("probabilities", "detected", reason)
    return OutputReading("probabilities", "detected", f"every value on {where} is in [0, 1]")
