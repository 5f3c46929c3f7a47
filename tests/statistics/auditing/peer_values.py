"""Golden values from the peers' one-run functions, run side by side on the same inputs.

How they were produced (outside the project; no peer code is part of epsstar): the peers'
source files were read from their public repositories and their functions called, with
significance 0.05 (confidence 0.95), in Python 3.11 with numpy 2.4.6, scipy 1.17.1 and
dp-accounting 0.6.0:

* jax_privacy (google-deepmind/jax_privacy, commit 8967688c26d4, ``jax_privacy/auditing.py``):
  ``_epsilon_one_run(0.0, m, r, v, 0.05, δ)`` (Steinke et al. 2023) and
  ``_epsilon_one_run_fdp(0.0, m, r, v, 0.05, δ)`` (Mahloujifar et al. 2024, μ-GDP read at δ);
  for scores, ``CanaryScoreAuditor(scores[in], scores[~in]).epsilon_one_run(0.05, δ,
  threshold_strategy=Explicit(t))`` and ``epsilon_one_run_fdp`` alike, t the k₊-th highest
  score (jax_privacy guesses "in" only, k₋ = 0).
* ML Privacy Meter (privacytrustlab/ml_privacy_meter, commit e384af8fd931, ``audit.py``):
  ``get_eps_audit(m, r, v, δ, 0.05)``, and for scores
  ``compute_abstain_attack_results_for_k_pos_k_neg(scores, in, m − k₊, k₋, δ, 0.05)``, whose
  ``correct_num`` is the count of right guesses.

The scores are :func:`canary_scores` (m, μ): deterministic, so the peers and the tests see
the same canaries.

Root-finding tolerances of the peers bound the agreement: jax_privacy stops Brent's method
at xtol = 1e-6, ML Privacy Meter bisects until the bracket is 1e-5 wide and returns its lower
end.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtri

#: (m, r, v, δ, jax_privacy ε, jax_privacy f-DP ε, ML Privacy Meter ε); NaN: not run (δ = 0).
COUNT_CASES = [
    (1000, 100, 80, 1e-05, 0.9553185001776855, 1.402214673838583, 0.9553146362304688),
    (1000, 200, 180, 1e-06, 1.7986085009508792, 3.261190678269781, 1.7986068725585938),
    (10000, 1000, 700, 1e-05, 0.7292531300505262, 0.9892560978994478, 0.729248046875),
    (100, 20, 20, 1e-05, 1.819596907485671, 3.2393925462725353, 1.8195953369140625),
    (5000, 5000, 3000, 1e-05, 0.35737180213446273, 0.6183252203848071, 0.35736846923828125),
    (1000, 100, 80, 0.0, 0.9583920335782794, math.nan, 0.9583892822265625),
    (2000, 400, 300, 1e-05, 0.9027787222822722, 1.3907819491792124, 0.9027786254882812),
    (100000, 2000, 1900, 1e-06, 2.767895818961992, 3.7139352721467715, 2.7678909301757812),
]

#: (m, μ, k₊, k₋, δ, jax_privacy ε, jax_privacy f-DP ε, ML Privacy Meter ε, right guesses);
#: NaN where jax_privacy cannot guess "out" (k₋ > 0).
SCORE_CASES = [
    (1000, 1.0, 100, 0, 1e-05, 1.253106953022925, 1.8674536788705642, 1.2531051635742188, 85),
    (1000, 1.5, 100, 0, 1e-05, 2.3151491780492, 3.568789910290268, 2.315145492553711, 96),
    (1000, 0.5, 200, 0, 1e-06, 0.6303646450498149, 1.1271853937683063, 0.6303634643554688, 142),
    (1000, 3.0, 50, 0, 1e-05, 2.7562194720722912, 4.0619149684261044, 2.7562179565429688, 50),
    (1000, 1.5, 50, 50, 1e-05, math.nan, math.nan, 3.4653701782226562, 100),
    (1000, 2.0, 250, 250, 1e-05, math.nan, math.nan, 2.634195327758789, 476),
    (5000, 1.0, 500, 500, 1e-05, math.nan, math.nan, 1.6846160888671875, 863),
]


def _uniforms(m: int, salt: int) -> np.ndarray:
    """splitmix64 of (salt, i) for i < m: deterministic, well-mixed uniforms in (0, 1)."""
    x = np.arange(m, dtype=np.uint64) + np.uint64(salt) * np.uint64(2**32)
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x = x ^ (x >> np.uint64(31))
    return ((x >> np.uint64(11)).astype(np.float64) + 0.5) / 2.0**53


def canary_scores(m: int, mu: float) -> tuple[np.ndarray, np.ndarray]:
    """(scores, included): each canary in with probability ½, score N(μ·in, 1), higher = in."""
    included = _uniforms(m, 1) < 0.5
    return ndtri(_uniforms(m, 2)) + mu * included, included
