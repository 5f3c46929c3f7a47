"""The attacks' default parameters (no heavy imports: the command line's help reads them)."""

from __future__ import annotations

from typing import Final

__all__ = ["DEFAULT_A", "DEFAULT_GAMMA"]

#: RMIA's offline scaling ``a`` (privacy meter's default is 0.3; the RMIA paper tunes it per
#: data set on a reference model treated as a target).
DEFAULT_A: Final[float] = 0.3
#: The ratio γ a record must beat a population record by in RMIA.
DEFAULT_GAMMA: Final[float] = 1.0
