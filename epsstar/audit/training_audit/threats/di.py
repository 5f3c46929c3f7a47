"""``di``: the population records again, scored by the DI adversary (white box).

Bernau et al. 2021, "Quantifying identifiability to choose and audit ε in differentially private
deep learning" (Algorithm 1): the log posterior odds of the data set with the canary from every
step's noisy gradient, with the canary's clipped gradient at that step as its local sensitivity.
"""

from __future__ import annotations

from typing import Final

from epsstar.audit.training_audit.threat_models import ThreatModel

RANK: Final = 50
THREAT_MODEL: Final = ThreatModel(
    "di",
    "population",
    "every step's noisy gradient sum (white box)",
    "the DI adversary's log posterior odds of the data set with the canary (Algorithm 1 of "
    'Bernau et al. 2021, "Quantifying identifiability to choose and audit ε in differentially '
    'private deep learning")',
    "members_higher",
    True,
)
