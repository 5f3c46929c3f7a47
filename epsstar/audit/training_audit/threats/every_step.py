"""``every-step``: the gradient canaries, seen in every step's noisy gradient sum (white box).

Each step and coordinate is read with its own variance: the noise read off the step plus the
batch's sampling spread on that coordinate (``epsstar.training.threat_models.every_step``).
"""

from __future__ import annotations

from typing import Final

from epsstar.audit.training_audit.threat_models import ThreatModel

RANK: Final = 40
THREAT_MODEL: Final = ThreatModel(
    "every-step",
    "gradient",
    "every step's noisy gradient sum (white box)",
    "the sum over steps of the log-likelihood ratio of in against out on the canary's "
    "coordinate: the noisy gradient sum there, less the part the rest of the data is "
    "expected to give, read with that step's noise variance (read off the step) plus the "
    "variance the batch's sampling adds on that coordinate",
    "members_higher",
    True,
)
