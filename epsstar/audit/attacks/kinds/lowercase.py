"""The lowercase ratio (Carlini et al. 2021) as an audit's attack on text records: the mean
token loss over the loss on the record's lower-case text
(:func:`epsstar.statistics.attacks.text_scores.lowercase_ratio`)."""

from __future__ import annotations

from epsstar.audit.attacks.attack import AttackParameters, Scores
from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.exceptions import InvalidInputError
from epsstar.statistics.attacks.text_scores import lowercase_ratio

__all__ = ["lowercase_scores"]


def lowercase_scores(inputs: AttackInputs, parameters: AttackParameters, seed: int) -> Scores:
    """``L / L_lower`` of every member and non-member."""
    text = inputs.text_for("lowercase")
    train, population = text.train, text.population
    if train.lowercase_loss is None or population.lowercase_loss is None:
        raise InvalidInputError("the lowercase attack needs the lower-case losses. Found none.")
    return Scores(
        lowercase_ratio(train.loss, train.lowercase_loss),
        lowercase_ratio(population.loss, population.lowercase_loss),
        {"score": "mean token loss / mean token loss on the lower-case text"},
    )
