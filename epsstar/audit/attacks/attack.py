"""What a membership attack is to the audit: what it needs, and the scores it gives.

An attack turns the target's (and, for some, the reference models') outputs into one score
per record, oriented like a loss (lower: more likely a member). :class:`Attack` names it,
says what it needs (:data:`Need`) and gives its scorer; :mod:`.registry` lists them. The
audit turns every attack's scores into Epsilon*, its lower bound and its power exactly as it
does the loss (:mod:`.scoring`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.plumbing.records.constraints import InRange, check_fields, constraint
from epsstar.plumbing.records.json_types import JsonValue
from epsstar.statistics._validation import FloatArray
from epsstar.statistics.attacks.defaults import DEFAULT_A, DEFAULT_GAMMA
from epsstar.statistics.attacks.text_scores import DEFAULT_MIN_K
from epsstar.statistics.names import AttackName

__all__ = ["Attack", "AttackParameters", "Need", "Scorer", "Scores"]

#: What an attack needs beyond the audit's own losses: ``"log_odds"``, the target's and the
#: reference models' log-odds of the true label on every record (read by an engine);
#: ``"references"``, reference model files (``--reference-models``); ``"records"``, the
#: records of both tables; ``"blind"``, the blind classifier's log-odds (the blind baseline);
#: ``"text"``, a language model's per-sequence statistics on text records (:mod:`.sequences`);
#: ``"moments"``, the mean and spread of its log-probabilities over the vocabulary at every
#: position (an extra pass over each position's distribution); ``"lowercase"``, its loss on
#: the records in lower case (a second forward pass).
Need = Literal["log_odds", "references", "records", "blind", "text", "moments", "lowercase"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AttackParameters:
    """The attacks' tunable parameters, checked when built: RMIA's offline scaling ``a`` and
    ratio ``γ``, and the share ``min_k`` of tokens Min-K% and Min-K%++ average. The audit's
    :class:`~epsstar.audit.attacks.scoring.AttackSettings` are these parameters with the
    attacks asked for."""

    rmia_a: float = field(default=DEFAULT_A, metadata=constraint(InRange(0.0, 1.0, "both")))
    rmia_gamma: float = field(default=DEFAULT_GAMMA, metadata=constraint(InRange(0.0, math.inf)))
    min_k: float = field(default=DEFAULT_MIN_K, metadata=constraint(InRange(0.0, 1.0, "right")))

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True, slots=True)
class Scores:
    """One attack's scores: the members' and the non-members' (``nonmember_rows``: the
    population rows scored, ``None`` for all), and how they were made (for the JSON)."""

    members: FloatArray = field(repr=False)
    nonmembers: FloatArray = field(repr=False)
    settings: Mapping[str, JsonValue]
    nonmember_rows: NDArray[np.int64] | None = None


#: A scorer: the inputs, the parameters and the audit's seed in, the scores out.
Scorer = Callable[[AttackInputs, AttackParameters, int], Scores]


@dataclass(frozen=True, slots=True)
class Attack:
    """One attack: its name (one of :data:`epsstar.statistics.names.ATTACKS`), what it
    needs, and its scorer (``None`` for the loss attack, whose scores are the audit's own
    losses)."""

    name: AttackName
    needs: frozenset[Need]
    score: Scorer | None
