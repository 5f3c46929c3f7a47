"""``input``: records of the population, seen through the final model's loss (black box)."""

from __future__ import annotations

from typing import Final

from epsstar.audit.training_audit.threat_models import ThreatModel

RANK: Final = 10
THREAT_MODEL: Final = ThreatModel(
    "input",
    "population",
    "the final model's predictions (black box)",
    "the canary's loss (logit loss of its true label)",
    "members_lower",
    False,
)
