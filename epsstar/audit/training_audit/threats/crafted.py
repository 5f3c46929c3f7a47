"""``crafted``: records pushed into the tails of the data's distribution with flipped labels,
seen through the final model's loss (black box)."""

from __future__ import annotations

from typing import Final

from epsstar.audit.training_audit.threat_models import ThreatModel

RANK: Final = 20
THREAT_MODEL: Final = ThreatModel(
    "crafted",
    "crafted",
    "the final model's predictions (black box)",
    "the loss of the crafted record's flipped label",
    "members_lower",
    False,
)
