"""The threat models of an audit of a training procedure: what the adversary sees, and how it
scores each canary.

§III-IV of Nasr et al. 2021, "Adversary Instantiation: Lower Bounds for Differentially Private
Machine Learning", varies what the adversary sees of the training (the final model through its
predictions; the final weights; every intermediate update) and what it may put in the training data
(records of the data's distribution; crafted inputs; gradients). A lower bound measured under a weak
threat model says less about the trainer than one measured under a strong one: the DP-SGD analysis
already lets the adversary choose a gradient and see every step, so only the strongest threat models
can come near the accountant's ε (the tightness table of ``docs/training-audit.md``).

* ``input``: records of the population, seen through the final model's loss (black box);
* ``crafted``: out-of-distribution records with flipped labels, seen through the final model's
  loss (black box);
* ``gradient``: gradient canaries (Dirac directions) added to the clipped sum, seen in the
  final weights (white box);
* ``every-step``: the same gradient canaries, seen in every step's noisy gradient sum (each
  step and coordinate read with its own variance: the noise read off the step plus the
  batch's sampling spread on that coordinate);
* ``di``: the population records again, scored by the DI adversary of
  Bernau et al. 2021, "Quantifying identifiability to choose and audit ε in differentially private
  deep learning" (Algorithm 1): the log posterior odds of the data set with the canary from every
  step's noisy gradient, with the canary's clipped gradient at that step as its local sensitivity.

The white-box threat models need to see inside the trainer: only epsstar's own trainer offers
them (``epsstar.training.threat_models``); a command is audited through the models it saves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from epsstar.exceptions import InvalidInputError
from epsstar.plumbing.json_records import JsonRecord
from epsstar.statistics.bounds.held_out_bound import Direction

__all__ = [
    "THREAT_MODELS",
    "CanaryKind",
    "ThreatModel",
    "ThreatModelName",
    "threat_model",
    "threat_models",
]

ThreatModelName = Literal["input", "crafted", "gradient", "every-step", "di"]
#: The kinds of canary: records drawn from the population, records crafted out of its
#: distribution, and gradients.
CanaryKind = Literal["population", "crafted", "gradient"]
CANARY_KINDS: Final[tuple[CanaryKind, ...]] = ("population", "crafted", "gradient")


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


THREAT_MODELS: Final[tuple[ThreatModel, ...]] = (
    ThreatModel(
        "input",
        "population",
        "the final model's predictions (black box)",
        "the canary's loss (logit loss of its true label)",
        "members_lower",
        False,
    ),
    ThreatModel(
        "crafted",
        "crafted",
        "the final model's predictions (black box)",
        "the loss of the crafted record's flipped label",
        "members_lower",
        False,
    ),
    ThreatModel(
        "gradient",
        "gradient",
        "the initial and final weights (white box)",
        "the final weights' distance along the canary's direction below the path expected "
        "without it",
        "members_higher",
        True,
    ),
    ThreatModel(
        "every-step",
        "gradient",
        "every step's noisy gradient sum (white box)",
        "the sum over steps of the log-likelihood ratio of in against out on the canary's "
        "coordinate: the noisy gradient sum there, less the part the rest of the data is "
        "expected to give, read with that step's noise variance (read off the step) plus the "
        "variance the batch's sampling adds on that coordinate",
        "members_higher",
        True,
    ),
    ThreatModel(
        "di",
        "population",
        "every step's noisy gradient sum (white box)",
        "the DI adversary's log posterior odds of the data set with the canary (Algorithm 1 of "
        'Bernau et al. 2021, "Quantifying identifiability to choose and audit ε in differentially '
        'private deep learning")',
        "members_higher",
        True,
    ),
)


def threat_model(name: str) -> ThreatModel:
    """The threat model called ``name``."""
    for model in THREAT_MODELS:
        if model.name == name:
            return model
    allowed = ", ".join(model.name for model in THREAT_MODELS)
    raise InvalidInputError(f"threat model must be one of {allowed}. Found {name!r}.")


def threat_models(names: tuple[str, ...] | list[str]) -> tuple[ThreatModel, ...]:
    """The threat models ``names`` (each once, in the order of :data:`THREAT_MODELS`)."""
    if not names:
        raise InvalidInputError("at least one threat model is needed. Found none.")
    chosen = {threat_model(name).name for name in names}
    return tuple(model for model in THREAT_MODELS if model.name in chosen)
