"""Min-K%++ (Zhang et al. 2024) as an audit's attack on text records: Min-K% over token
log-probabilities standardised by the mean and spread of the model's log-probabilities over
the vocabulary (:func:`epsstar.statistics.attacks.text_scores.min_k_plus_plus`, computed
while the records are scored)."""

from __future__ import annotations

from epsstar.audit.attacks.attack import AttackParameters, Scores
from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.exceptions import InvalidInputError

__all__ = ["min_k_plus_plus_scores"]


def min_k_plus_plus_scores(inputs: AttackInputs, parameters: AttackParameters, seed: int) -> Scores:
    """Min-K%++ of every member and non-member, at the share ``min_k`` of their tokens."""
    text = inputs.text_for("minkpp")
    members, others = text.train.min_k_plus_plus, text.population.min_k_plus_plus
    if members is None or others is None:
        raise InvalidInputError("the minkpp attack needs the Min-K%++ statistics. Found none.")
    return Scores(
        members,
        others,
        {
            "score": "-mean of the lowest K% of (log p - mu) / sigma over the tokens",
            "k": text.min_k,
        },
    )
