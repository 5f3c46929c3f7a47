"""``text``: text canaries of a language model's fine-tuning, seen through the final model's
token probabilities (black box).

Each canary is a prefix and a secret (``--canary-design``, :mod:`..text.designs`); its score
is the mean loss of the secret's tokens given the prefix, less a reference model's loss on the
same tokens with ``--reference-model`` (:mod:`..text.scoring`).
"""

from __future__ import annotations

from typing import Final

from epsstar.audit.training_audit.threat_models import ThreatModel

RANK: Final = 15
THREAT_MODEL: Final = ThreatModel(
    "text",
    "text",
    "the final model's token probabilities (black box)",
    "the mean loss of the canary's secret tokens given its prefix (less a reference model's "
    "loss on the same tokens with --reference-model)",
    "members_lower",
    False,
)
