"""The zlib ratio (Carlini et al. 2021) as an audit's attack on text records: the mean token
loss over the zlib-compressed length of the record's text
(:func:`epsstar.statistics.attacks.text_scores.zlib_ratio`)."""

from __future__ import annotations

from epsstar.audit.attacks.attack import AttackParameters, Scores
from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.statistics.attacks.text_scores import zlib_ratio

__all__ = ["zlib_scores"]


def zlib_scores(inputs: AttackInputs, parameters: AttackParameters, seed: int) -> Scores:
    """``L / zlib bytes`` of every member and non-member."""
    text = inputs.text_for("zlib")
    train, population = text.train, text.population
    return Scores(
        zlib_ratio(train.loss, train.zlib_bytes),
        zlib_ratio(population.loss, population.zlib_bytes),
        {"score": "mean token loss / zlib-compressed bytes of the text"},
    )
