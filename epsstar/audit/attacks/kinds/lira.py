"""Offline LiRA (Carlini et al. 2022) as an audit's attack: the likelihood ratio of the
target's log-odds against the reference models' (:mod:`epsstar.statistics.attacks.lira`),
every population record scored."""

from __future__ import annotations

import numpy as np

from epsstar.audit.attacks.attack import AttackParameters, Scores
from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.plumbing.records.json_types import JsonObject
from epsstar.statistics.attacks.lira import lira_offline

__all__ = ["lira_scores"]


def lira_scores(inputs: AttackInputs, parameters: AttackParameters, seed: int) -> Scores:
    """``(mu_out - phi) / sigma_out`` of every member and non-member."""
    (on_train, on_population), references = inputs.with_references()
    both = np.concatenate([on_train, on_population])
    refs = np.hstack([references.train, references.population])
    lira = lira_offline(both, refs)
    n = on_train.size
    settings: JsonObject = {
        "reference_models": references.count,
        "score": "(mu_out - phi) / sigma_out",
        "variance": lira.variance,
    }
    return Scores(lira.scores[:n], lira.scores[n:], settings)
