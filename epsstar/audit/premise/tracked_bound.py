"""The data-dependent bound on attribute inference that ``epsstar train --attribute COLUMN``
recorded for a model, read from the ``training.json`` beside the model file.

The trainer tracks, at every DP-SGD step, the distance between a record's clipped gradients
under the attribute's values, and records the bound of Corollary 10 of Cherubin et al. 2024,
"Closed-Form Bounds for DP-SGD against Record-level Inference" (:mod:`epsstar.training.attribute`)
under ``attribute_inference`` in ``training.json``. An audit with ``--attribute`` on the same column
shows it beside the measured advantage, with a ``source`` saying so.

For another column, or a run without tracking, the record still holds the exact membership
advantage of the DP-SGD run, δ(0) of its privacy loss distribution under add/remove
(``privacy.bayes_security.add_remove.advantage_exact``, dp_accounting's PLD, pessimistic):
the largest TPR − FPR of any membership test, and being right about the attribute is one
(:mod:`epsstar.statistics.readings.attribute`), so it bounds the attribute advantage too,
tighter than eq. 5 of the declared (ε, δ). A model without a record gets that declared
bound (:mod:`.findings`). The record is used only when its ``files`` name the audited file.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Final

from epsstar.exceptions import InputFileError
from epsstar.plumbing.files.json_parsing import read_json_file
from epsstar.plumbing.records.json_types import JsonObject
from epsstar.statistics.readings.attribute import AttributeSecurity

__all__ = ["FROM_EXACT_MEMBERSHIP", "FROM_TRAINING_RECORD", "RECORD_NAME", "tracked_bound"]

#: The file ``epsstar train`` writes beside the model.
RECORD_NAME: Final = "training.json"

#: ``source`` of the bound read from ``training.json``.
FROM_TRAINING_RECORD: Final = (
    "gradients tracked by epsstar train --attribute, a data-dependent bound (training.json "
    "beside the model; Cherubin et al. 2024, Corollary 10)"
)


#: ``source`` of the exact membership advantage read from ``training.json``.
FROM_EXACT_MEMBERSHIP: Final = (
    "exact membership advantage of the DP-SGD run, delta(0) of its privacy loss distribution "
    "under add/remove (training.json beside the model; tighter than the declared (epsilon, "
    "delta))"
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


def _exact_membership(record: JsonObject) -> AttributeSecurity | None:
    """The PLD's exact membership advantage (add/remove) the record holds (``None``: none)."""
    privacy = record.get("privacy")
    readings = privacy.get("bayes_security") if isinstance(privacy, dict) else None
    relation = readings.get("add_remove") if isinstance(readings, dict) else None
    exact = relation.get("advantage_exact") if isinstance(relation, dict) else None
    if isinstance(exact, bool) or not isinstance(exact, int | float) or not 0 <= exact <= 1:
        return None
    return AttributeSecurity(1.0 - float(exact), float(exact), None, None, FROM_EXACT_MEMBERSHIP)


def _tracked(record: JsonObject, where: Path) -> AttributeSecurity:
    """The bound of the record's ``attribute_inference``, checked."""
    tracked = record["attribute_inference"]
    bound = tracked.get("bound") if isinstance(tracked, dict) else None
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


def tracked_bound(model_path: Path, column: str) -> AttributeSecurity | None:
    """The bound the ``training.json`` beside ``model_path`` gives attribute inference on
    ``column``: the tracked one when it recorded ``column``'s, else the exact membership
    advantage of its DP-SGD run (``None``: no record, or one for another model file)."""
    where = (model_path if model_path.is_dir() else model_path.parent) / RECORD_NAME
    if not where.is_file():
        return None
    try:
        record = read_json_file(where, str(where))
    except InputFileError:
        return None  # unreadable, malformed or beyond the bound: no record to read
    if not isinstance(record, dict):
        return None
    files = record.get("files")
    if not model_path.is_dir() and (
        not isinstance(files, dict) or model_path.name not in files.values()
    ):
        return None
    tracked = record.get("attribute_inference")
    if isinstance(tracked, dict) and tracked.get("column") == column:
        return _tracked(record, where)
    return _exact_membership(record)
