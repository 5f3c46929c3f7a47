"""A model folder's ``training.json`` read back: the fields a resumed sweep and its
manifest read, declared (:mod:`epsstar.plumbing.files.schema`) and checked by type and
range, so that a record edited by hand or cut short is one line, never a ``KeyError``.

``epsstar/schemas/training.schema.json`` declares the whole document; only the fields read
here are checked, and keys that later versions add are let through.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from epsstar.plumbing.files.schema import (
    Anything,
    Fields,
    Flag,
    Integer,
    Nullable,
    Number,
    Table,
    Text,
    Where,
    read_json,
)
from epsstar.training.runs.settings import BATCH_SIZE, EPOCHS, HIDDEN, LR, MOMENTUM, SEED

__all__ = ["RECORD_SCHEMA", "ManifestCell", "read_record", "record_cells"]

#: A value of a manifest row.
ManifestCell = str | int | float | bool | tuple[int, ...] | tuple[str, ...] | None

_NUMBER = Nullable(Number())
_SHARE = Nullable(Number(0.0, 1.0))
_CLIP = Nullable(Number(0.0))
_MICROBATCHES = Nullable(Integer(1))
_HYPER = Table(
    {
        "epochs": EPOCHS,
        "batch_size": BATCH_SIZE,
        "clip": _CLIP,
        "microbatches": _MICROBATCHES,
        "lr": LR,
        "momentum": MOMENTUM,
        "seed": SEED,
    },
    required=("epochs", "batch_size", "lr", "momentum", "seed"),
    extra=Anything(),
)
_ACCOUNTANT_NAME = Text(max_length=256)
_ACCOUNTANT = Nullable(Table({"name": _ACCOUNTANT_NAME}, extra=Anything()))
_PRIVACY = Nullable(
    Table(
        {
            "target_epsilon": _NUMBER,
            "epsilon": _NUMBER,
            "delta": _NUMBER,
            "noise_multiplier": _NUMBER,
            "accountant": _ACCOUNTANT,
        },
        extra=Anything(),
    )
)
_SCORES = Table({"accuracy": _SHARE, "auroc": _SHARE}, extra=Anything())
_POPULATION = Nullable(_SCORES)
_UTILITY = Table({"train": _SCORES, "population": _POPULATION}, required=("train",))
_MODEL = Table({"hidden": HIDDEN}, required=("hidden",), extra=Anything())
_PRIVATE = Flag()
#: The fields of ``training.json`` a sweep reads.
RECORD_SCHEMA: Final = Table(
    {
        "private": _PRIVATE,
        "hyperparameters": _HYPER,
        "privacy": _PRIVACY,
        "utility": _UTILITY,
        "model": _MODEL,
        "fingerprint": Anything(),
    },
    required=("private", "hyperparameters", "utility", "model"),
    extra=Anything(),
)


def read_record(path: Path) -> Fields:
    """The ``training.json`` at ``path``, checked by :data:`RECORD_SCHEMA`."""
    return RECORD_SCHEMA.check(read_json(path, "training.json"), Where(str(path)))


def record_cells(record: Fields) -> dict[str, ManifestCell]:
    """The manifest columns a finished model's record gives."""
    hyper = record.need("hyperparameters", _HYPER)
    privacy = record.get("privacy", _PRIVACY)
    utility = record.need("utility", _UTILITY)
    population = utility.get("population", _POPULATION)
    accountant = None if privacy is None else privacy.get("accountant", _ACCOUNTANT)

    def private_number(key: str) -> float | None:
        return None if privacy is None else privacy.get(key, _NUMBER)

    return {
        "private": record.need("private", _PRIVATE),
        "epochs": hyper.need("epochs", EPOCHS),
        "batch_size": hyper.need("batch_size", BATCH_SIZE),
        "clip": hyper.get("clip", _CLIP),
        "microbatches": hyper.get("microbatches", _MICROBATCHES),
        "target_epsilon": private_number("target_epsilon"),
        "epsilon": private_number("epsilon"),
        "delta": private_number("delta"),
        "noise_multiplier": private_number("noise_multiplier"),
        "accountant": None if accountant is None else accountant.get("name", _ACCOUNTANT_NAME),
        "hidden": record.need("model", _MODEL).need("hidden", HIDDEN),
        "lr": hyper.need("lr", LR),
        "momentum": hyper.need("momentum", MOMENTUM),
        "seed": hyper.need("seed", SEED),
        "train_accuracy": utility.need("train", _SCORES).get("accuracy", _SHARE),
        "population_accuracy": None if population is None else population.get("accuracy", _SHARE),
        "population_auroc": None if population is None else population.get("auroc", _SHARE),
    }
