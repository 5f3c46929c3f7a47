"""Offline RMIA (Zarifzadeh et al. 2024) as an audit's attack: each record's likelihood ratio
against population records ``z`` (:mod:`epsstar.statistics.attacks.rmia`).

A random subset of the population (:func:`z_split`, fixed by the seed) is set aside as
``z``, and RMIA scores only the other population records, so that no scored record is
compared with itself.
"""

from __future__ import annotations

from typing import Final

import numpy as np
from numpy.typing import NDArray

from epsstar.audit.attacks.attack import AttackParameters, Scores
from epsstar.audit.attacks.inputs import AttackInputs
from epsstar.plumbing.records.json_types import JsonObject
from epsstar.statistics.attacks.rmia import rmia_offline

__all__ = ["Z_FRACTION", "Z_MAX", "rmia_scores", "z_split"]

#: The share of the population set aside as RMIA's ``z`` records, and their largest number.
Z_FRACTION: Final[float] = 0.25
Z_MAX: Final[int] = 5_000


def z_split(n_population: int, seed: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(scored, z) population indices: ``z`` a random ``Z_FRACTION`` (at most ``Z_MAX``,
    at least 1) of the population, the rest scored; both sorted."""
    n_z = min(Z_MAX, max(1, int(n_population * Z_FRACTION)))
    chosen = np.random.default_rng([seed, 0x2A]).permutation(n_population)
    return np.sort(chosen[n_z:]), np.sort(chosen[:n_z])


def rmia_scores(inputs: AttackInputs, parameters: AttackParameters, seed: int) -> Scores:
    """``1 - Pr_z(LR(x, z) >= γ)`` of every member and of the population records not in ``z``."""
    (on_train, on_population), references = inputs.with_references()
    scored, z = z_split(on_population.size, seed)
    both = np.concatenate([on_train, on_population[scored]])
    refs = np.hstack([references.train, references.population[:, scored]])
    rmia = rmia_offline(
        both,
        refs,
        on_population[z],
        references.population[:, z],
        a=parameters.rmia_a,
        gamma=parameters.rmia_gamma,
    )
    n = on_train.size
    settings: JsonObject = {
        "reference_models": references.count,
        "score": "1 - Pr_z(LR(x, z) >= gamma)",
        "a": rmia.a,
        "gamma": rmia.gamma,
        "z_records": int(z.size),
        "scored_population_records": int(scored.size),
        "z_selection": f"random {Z_FRACTION:.0%} of the population (at most {Z_MAX}), "
        f"seed {seed}; not scored",
    }
    return Scores(rmia.scores[:n], rmia.scores[n:], settings, scored)
