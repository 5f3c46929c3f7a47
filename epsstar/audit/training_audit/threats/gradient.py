"""``gradient``: gradient canaries (Dirac directions) added to the clipped sum, seen in the
final weights (white box)."""

from __future__ import annotations

from typing import Final

from epsstar.audit.training_audit.threat_models import ThreatModel

RANK: Final = 30
THREAT_MODEL: Final = ThreatModel(
    "gradient",
    "gradient",
    "the initial and final weights (white box)",
    "the final weights' distance along the canary's direction below the path expected without it",
    "members_higher",
    True,
)
