"""The threat models of an audit of a training procedure: what the adversary sees, and how it
scores each canary.

§III-IV of Nasr et al. 2021, "Adversary Instantiation: Lower Bounds for Differentially Private
Machine Learning", varies what the adversary sees of the training (the final model through its
predictions; the final weights; every intermediate update) and what it may put in the training data
(records of the data's distribution; crafted inputs; gradients). A lower bound measured under a weak
threat model says less about the trainer than one measured under a strong one: the DP-SGD analysis
already lets the adversary choose a gradient and see every step, so only the strongest threat models
can come near the accountant's ε (the tightness table of ``docs/training-audit.md``).

Each threat model is one module of the package :data:`REGISTRY`, which declares its
:class:`ThreatModel`; this module reads them all (:func:`registered_threat_models`), and the
command line's choices, the checks of a request, the JSON and the report take them from here.

The white-box threat models need to see inside the trainer: only epsstar's own trainer offers
them (``epsstar.training.threat_models``); a command is audited through the models it saves.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from dataclasses import dataclass
from typing import Final, Literal

from epsstar.exceptions import EpsstarError, InvalidInputError
from epsstar.plumbing.records.json_records import JsonRecord
from epsstar.statistics.bounds.held_out_bound import Direction
from epsstar.statistics.names import Name, Names

__all__ = [
    "REGISTRY",
    "CanaryKind",
    "ThreatModel",
    "ThreatModelName",
    "black_box_names",
    "registered_threat_models",
    "text_names",
    "threat_model",
    "threat_model_names",
    "threat_models",
]

#: A threat model's name: one of :func:`threat_model_names`.
ThreatModelName = str
#: The package whose modules are the threat models, one each (see its docstring).
REGISTRY: Final = "epsstar.audit.training_audit.threats"
#: The kinds of canary: records drawn from the population, records crafted out of its
#: distribution, gradients, and the text canaries of a language model.
CanaryKind = Literal["population", "crafted", "gradient", "text"]
CANARY_KINDS: Final[tuple[CanaryKind, ...]] = ("population", "crafted", "gradient", "text")


@dataclass(frozen=True, slots=True)
class ThreatModel(JsonRecord):
    """One threat model: its canaries, what the adversary sees, and its score.

    ``direction`` says which scores look like members (``members_lower`` for losses);
    ``white_box`` threat models need epsstar's own trainer. Its JSON is the record of
    ``threat_models[].threat_model``.
    """

    name: ThreatModelName
    canaries: CanaryKind
    sees: str
    score: str
    direction: Direction
    white_box: bool


@functools.cache
def registered_threat_models() -> tuple[ThreatModel, ...]:
    """Every threat model of the :data:`REGISTRY` package (one per module), by rank."""
    package = importlib.import_module(REGISTRY)
    ranked: list[tuple[int, ThreatModel]] = []
    for found in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{REGISTRY}.{found.name}")
        model, rank = getattr(module, "THREAT_MODEL", None), getattr(module, "RANK", None)
        if not isinstance(model, ThreatModel) or not isinstance(rank, int):
            raise EpsstarError(
                "a threat model's module must declare THREAT_MODEL and an integer RANK. "
                f"Found {module.__name__} without them."
            )
        ranked.append((rank, model))
    return tuple(model for _, model in sorted(ranked, key=lambda pair: pair[0]))


@functools.cache
def threat_model_names() -> Names[ThreatModelName]:
    """The registered threat models' names (the command line's choices), each summarised by
    what the adversary inserts and sees, and described by its score too."""
    return Names(
        "threat model",
        tuple(
            Name(
                model.name,
                f"{model.canaries} canaries, {model.sees}",
                f"the adversary inserts {model.canaries} canaries and sees {model.sees}; "
                f"its score: {model.score}",
            )
            for model in registered_threat_models()
        ),
    )


def black_box_names() -> tuple[ThreatModelName, ...]:
    """The threat models every procedure serves: those seen through the final model."""
    return tuple(model.name for model in registered_threat_models() if not model.white_box)


def text_names() -> tuple[ThreatModelName, ...]:
    """The threat models of text canaries (``--text-column``): no other serves a language
    model's audit, and they serve no table's."""
    return tuple(model.name for model in registered_threat_models() if model.canaries == "text")


def threat_model(name: str) -> ThreatModel:
    """The threat model called ``name``."""
    threat_model_names().check(name)
    return next(model for model in registered_threat_models() if model.name == name)


def threat_models(names: tuple[str, ...] | list[str]) -> tuple[ThreatModel, ...]:
    """The threat models ``names`` (each once, in the order of the registry)."""
    if not names:
        raise InvalidInputError("at least one threat model is needed. Found none.")
    chosen = {threat_model(name).name for name in names}
    return tuple(model for model in registered_threat_models() if model.name in chosen)
