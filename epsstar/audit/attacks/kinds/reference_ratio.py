"""The reference-model likelihood ratio (Carlini et al. 2021) as an audit's attack on text
records: the target's mean token loss minus the reference models' mean
(:func:`epsstar.statistics.attacks.text_scores.reference_ratio`)."""

from __future__ import annotations

from epsstar.audit.attacks.attack import AttackParameters, Scores
from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.statistics.attacks.text_scores import reference_ratio

__all__ = ["reference_ratio_scores"]


def reference_ratio_scores(inputs: AttackInputs, parameters: AttackParameters, seed: int) -> Scores:
    """``L − mean_j L_ref,j`` of every member and non-member; the reference models' mean
    token losses are minus their log-likelihoods in ``inputs.references``."""
    text = inputs.text_for("ref")
    _, references = inputs.with_references()
    return Scores(
        reference_ratio(text.train.loss, -references.train),
        reference_ratio(text.population.loss, -references.population),
        {
            "score": "mean token loss - mean of the reference models' mean token losses",
            "reference_models": references.count,
        },
    )
