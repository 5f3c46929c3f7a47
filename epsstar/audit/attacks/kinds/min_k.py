"""Min-K% (Shi et al. 2024) as an audit's attack on text records: minus the mean
log-probability of each record's least likely tokens
(:func:`epsstar.statistics.attacks.text_scores.min_k_percent`, computed while the records
are scored)."""

from __future__ import annotations

from epsstar.audit.attacks.attack import AttackParameters, Scores
from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.exceptions import InvalidInputError

__all__ = ["min_k_scores"]


def min_k_scores(inputs: AttackInputs, parameters: AttackParameters, seed: int) -> Scores:
    """Min-K% of every member and non-member, at the share ``min_k`` of their tokens."""
    text = inputs.text_for("mink")
    members, others = text.train.min_k, text.population.min_k
    if members is None or others is None:
        raise InvalidInputError("the mink attack needs the Min-K% statistics. Found none.")
    return Scores(
        members,
        others,
        {"score": "-mean of the lowest K% token log-probabilities", "k": text.min_k},
    )
