"""epsstar: black-box privacy audit of one trained model instance.

The public names load lazily, so ``import epsstar`` (and the CLI) start fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "epsilon_star": "epsstar.statistics.estimators.estimator",
    "EpsilonStarResult": "epsstar.statistics.results",
    "epsilon_lower_bound": "epsstar.statistics.bounds.from_counts",
    "EpsilonLowerBound": "epsstar.statistics.bounds.from_counts",
    "mechanism_epsilon": "epsstar.statistics.bounds.from_counts",
    "compute_losses": "epsstar.statistics.losses",
}

#: ``epsstar.NAME`` that is a function of another name in its module.
_RENAMED: dict[str, tuple[str, str]] = {
    "audit_training": ("epsstar.api", "audit_training_objects"),
}

#: Subpackages that ``epsstar.NAME`` imports on first use (``epsstar.reports.render(...)``).
_SUBPACKAGES = frozenset({"audit", "reports", "statistics", "training"})

__all__ = [
    "EpsilonLowerBound",
    "EpsilonStarResult",
    "__version__",
    "audit_training",
    "compute_losses",
    "epsilon_lower_bound",
    "epsilon_star",
    "mechanism_epsilon",
]

if TYPE_CHECKING:  # pragma: no cover
    from epsstar.statistics.bounds.from_counts import (
        EpsilonLowerBound,
        epsilon_lower_bound,
        mechanism_epsilon,
    )
    from epsstar.statistics.estimators.estimator import epsilon_star
    from epsstar.statistics.losses import compute_losses
    from epsstar.statistics.results import EpsilonStarResult


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        return importlib.import_module(f"epsstar.{name}")
    if name in _RENAMED:
        where, own = _RENAMED[name]
        return getattr(importlib.import_module(where), own)
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'epsstar' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
