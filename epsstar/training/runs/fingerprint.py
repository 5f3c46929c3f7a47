"""What defines a trained model, recorded in its ``training.json`` as ``fingerprint``.

A model is the product of its full training configuration (every
:class:`~epsstar.training.trainer.TrainingConfig` setting, the seed included) and of its
data: the training file's content (SHA-256 of its bytes), the feature columns it used,
the label column, and the population file's content (the utility in ``training.json``
and the manifest's population column refer to it). A resumed sweep reuses a finished
model only when the fingerprint recorded with it equals the one of the run it would
replace (:func:`fingerprint_change` names the first difference).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from epsstar.exceptions import InputFileError
from epsstar.plumbing.files.digests import sha256_of, sha256_of_bytes
from epsstar.plumbing.records.json_types import JsonObject, JsonValue
from epsstar.training.data.tables import TabularData
from epsstar.training.trainer import TrainingConfig

__all__ = ["data_fingerprint", "fingerprint", "fingerprint_change"]


def _content_sha256(table: TabularData) -> str:
    """SHA-256 of the table's file, or of its arrays when it was built in memory."""
    path = Path(table.source)
    if path.is_file():
        try:
            return sha256_of(path)
        except OSError as error:
            raise InputFileError(
                f"cannot read {table.source!r}: {error.strerror or error}."
            ) from None
    return sha256_of_bytes(
        np.ascontiguousarray(table.features).tobytes(),
        np.ascontiguousarray(table.labels).tobytes(),
        json.dumps([table.feature_names, table.classes]).encode("utf-8"),
    )


def data_fingerprint(data: TabularData, population: TabularData | None) -> JsonObject:
    """The data part: content hashes, label column and feature columns (in order)."""
    return {
        "train_sha256": _content_sha256(data),
        "population_sha256": None if population is None else _content_sha256(population),
        "label_column": data.label_column,
        "features": list(data.feature_names),
    }


def fingerprint(config: TrainingConfig, data_part: JsonObject) -> JsonObject:
    """The fingerprint of one run: its settings (the table of its standardiser chosen, so
    that naming the choice a run would make anyway is the same model), its data and a
    SHA-256 of both."""
    has_population = data_part.get("population_sha256") is not None
    settings: JsonObject = dataclasses.asdict(config.standardising(has_population))
    settings["hidden"] = list(config.hidden)
    del settings["device"]  # where it ran, not what it trained: the same model on every device
    body: JsonObject = {"training": settings, "data": dict(data_part)}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return {"sha256": sha256_of_bytes(text.encode("utf-8")), **body}


_DATA_NAMES = {
    "train_sha256": "the training data (content hash)",
    "population_sha256": "the population data (content hash)",
    "label_column": "the label column",
    "features": "the feature columns",
}


def fingerprint_change(recorded: JsonValue, expected: JsonObject) -> str | None:
    """None when ``recorded`` equals ``expected``; otherwise what differs, in a few words."""
    if not isinstance(recorded, dict):
        return "the model has no fingerprint (it was trained by an older epsstar)"
    if recorded.get("sha256") == expected["sha256"]:
        return None
    for part in ("data", "training"):
        old = recorded.get(part)
        if not isinstance(old, dict):
            return f"its recorded fingerprint has no {part!r} part"
        wanted = expected[part]
        assert isinstance(wanted, dict)  # as fingerprint() makes it
        for key, now in wanted.items():
            if old.get(key, "<absent>") != now:
                name = _DATA_NAMES.get(key, key) if part == "data" else key
                if key.endswith("sha256"):
                    return f"{name} changed"
                return f"{name} changed from {old.get(key)!r} to {now!r}"
    return "its recorded fingerprint does not match its settings"
