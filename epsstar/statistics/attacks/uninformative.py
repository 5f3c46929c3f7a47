"""When an attack's scores carry no information: every record scores the same.

A membership test calls a record a member when its score is at most a threshold, so it
needs at least two distinct values among the members' and the
non-members' scores together to put a threshold between two records. With a single value
every threshold calls every record alike, each test has ``FPR = 1 - FNR``, and the
attack's Epsilon* is 0 by construction, not by measurement: such an attack is
*uninformative*. Two distinct values already make a test (the atoms estimators count it
exactly), so nothing above one value is set aside. Scores that are not finite are refused
where scores are read, not classed here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from epsstar.statistics.names import AttackName
from epsstar.statistics.summaries.loss_summary import LossesLike, as_losses

__all__ = ["LIKELY_CAUSES", "uninformative_reason"]

#: The likely cause of an uninformative attack, for the attacks where one is known.
LIKELY_CAUSES: Final[Mapping[AttackName, str]] = {
    "lira": "the reference models are copies of the target?",
    "lowercase": "the text is already lowercase?",
    "mink": "the model gives every token the same probability?",
    "ref": "the reference models are copies of the target?",
    "rmia": "no record's ratio reaches the factor gamma?",
}


def uninformative_reason(
    members: LossesLike, nonmembers: LossesLike, attack: AttackName
) -> str | None:
    """Why ``attack``'s scores carry no information (one value over both sides), with its
    likely cause when one is known (else the value); ``None`` when they make a test."""
    sides = (as_losses(members, "member scores"), as_losses(nonmembers, "non-member scores"))
    wholes = [side.whole for side in sides]
    low = min(float(whole.lowest(1)[0]) for whole in wholes)
    high = max(float(whole.highest(1)[0]) for whole in wholes)
    if high > low:
        return None
    return f"every record scores the same ({LIKELY_CAUSES.get(attack, f'{low:.6g}')})"
