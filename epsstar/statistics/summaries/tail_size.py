"""How many of a sample's extreme values make one tail: the size the tail fits take by
default (:mod:`epsstar.statistics.fitting.tails`), and so the extremes a summary of losses
too many to hold keeps exactly (:mod:`.loss_summary`)."""

from __future__ import annotations

import math

__all__ = ["default_tail_size"]


def default_tail_size(n: int, scale: float = 1.0) -> int:
    """Excesses per tail: ``scale * min(0.2 n, 3 sqrt(n))`` rounded, at least 5.

    ``scale`` below 1 moves the tail threshold outwards (the bootstrap of
    :mod:`epsstar.statistics.estimators.estimator` draws it to carry the threshold choice's
    uncertainty into its interval).
    """
    base = max(5, min(math.floor(0.2 * n), math.ceil(3.0 * math.sqrt(n))))
    return max(5, round(scale * base))
