"""The data-dependent bound on attribute inference that ``epsstar train --attribute COLUMN``
recorded for a model, read from the ``training.json`` beside the model file.

The trainer tracks, at every DP-SGD step, the distance between a record's clipped gradients
under the attribute's values, and records the bound of Cherubin et al. 2024, Corollary 10
(``closed-form-bounds-dpsgd-cherubin-2024.md``; :mod:`epsstar.training.attribute`) under
``attribute_inference`` in ``training.json``. An audit with ``--attribute`` on the same
column shows it beside the measured advantage, with a ``source`` saying so; a model without
such a record gets the bound of the (ε, δ) it declares (:mod:`.findings`). The record is
used only when its ``files`` name the audited model file and its column is the audited one.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Final

from epsstar.exceptions import InputFileError
from epsstar.statistics.json_types import JsonObject
from epsstar.statistics.readings.attribute import AttributeSecurity

__all__ = ["FROM_TRAINING_RECORD", "RECORD_NAME", "tracked_bound"]

#: The file ``epsstar train`` writes beside the model.
RECORD_NAME: Final = "training.json"

#: ``source`` of the bound read from ``training.json``.
FROM_TRAINING_RECORD: Final = (
    "gradients tracked by epsstar train --attribute, a data-dependent bound (training.json "
    "beside the model; Cherubin et al. 2024, Corollary 10)"
)


def _number(bound: JsonObject, key: str, where: Path, *, optional: bool = False) -> float:
    value = bound.get(key)
    if optional and value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputFileError(
            f"the attribute_inference bound in {str(where)!r} must have a finite number "
            f"{key!r}. Found {value!r}."
        )
    return float(value)


def tracked_bound(model_path: Path, column: str) -> AttributeSecurity | None:
    """The bound ``training.json`` beside ``model_path`` records for ``column`` (``None``:
    no such record, or one for another model file or column)."""
    where = (model_path if model_path.is_dir() else model_path.parent) / RECORD_NAME
    try:
        record = json.loads(where.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("attribute_inference"), dict):
        return None
    files = record.get("files")
    if not model_path.is_dir() and (
        not isinstance(files, dict) or model_path.name not in files.values()
    ):
        return None
    tracked = record["attribute_inference"]
    if tracked.get("column") != column:
        return None
    bound = tracked.get("bound")
    if not isinstance(bound, dict):
        raise InputFileError(
            f"the attribute_inference record in {str(where)!r} must hold a 'bound' object. "
            f"Found {bound!r}."
        )
    advantage = _number(bound, "advantage_bound", where)
    if not 0.0 <= advantage <= 1.0:
        raise InputFileError(
            f"the attribute_inference bound in {str(where)!r} must have an advantage_bound "
            f"in [0, 1]. Found {advantage!r}."
        )
    error_order = _number(bound, "error_order", where, optional=True)
    r_norm = _number(bound, "r_norm", where, optional=True)
    return AttributeSecurity(
        beta=1.0 - advantage,
        advantage=advantage,
        error_order=None if math.isnan(error_order) else error_order,
        r_norm=None if math.isnan(r_norm) else r_norm,
        source=FROM_TRAINING_RECORD,
    )
