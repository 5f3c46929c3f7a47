"""The attacks an audit can run, by name: one line each.

A new attack is a module in :mod:`epsstar.audit.attacks.kinds` with its scorer, its name and
descriptions in :data:`epsstar.statistics.names.ATTACKS`, and one line here saying what it
needs. The engines read what the attacks of an audit need (:func:`needs_of`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Final

from epsstar.audit.attacks.attack import Attack, Need
from epsstar.audit.attacks.kinds.beyond_baseline import beyond_baseline_scores
from epsstar.audit.attacks.kinds.lira import lira_scores
from epsstar.audit.attacks.kinds.lowercase import lowercase_scores
from epsstar.audit.attacks.kinds.min_k import min_k_scores
from epsstar.audit.attacks.kinds.min_k_plus_plus import min_k_plus_plus_scores
from epsstar.audit.attacks.kinds.qmia import qmia_scores
from epsstar.audit.attacks.kinds.reference_ratio import reference_ratio_scores
from epsstar.audit.attacks.kinds.rmia import rmia_scores
from epsstar.audit.attacks.kinds.zlib import zlib_scores
from epsstar.statistics.names import AttackName

__all__ = ["REGISTRY", "attack", "needs_of"]

_WITH_REFERENCES: Final[frozenset[Need]] = frozenset({"log_odds", "references"})
_TEXT: Final[frozenset[Need]] = frozenset({"text"})

#: Every attack, by name (a read-only view).
REGISTRY: Final[Mapping[AttackName, Attack]] = MappingProxyType(
    {
        "loss": Attack("loss", frozenset(), None),
        "lira": Attack("lira", _WITH_REFERENCES, lira_scores),
        "rmia": Attack("rmia", _WITH_REFERENCES, rmia_scores),
        "qmia": Attack("qmia", frozenset({"records"}), qmia_scores),
        "beyond-baseline": Attack("beyond-baseline", frozenset({"blind"}), beyond_baseline_scores),
        "zlib": Attack("zlib", _TEXT, zlib_scores),
        "mink": Attack("mink", _TEXT, min_k_scores),
        "minkpp": Attack("minkpp", _TEXT | {"moments"}, min_k_plus_plus_scores),
        "ref": Attack("ref", _TEXT | {"references"}, reference_ratio_scores),
        "lowercase": Attack("lowercase", _TEXT | {"lowercase"}, lowercase_scores),
    }
)


def attack(name: AttackName) -> Attack:
    """The attack called ``name``."""
    return REGISTRY[name]


def needs_of(names: Iterable[AttackName]) -> frozenset[Need]:
    """Everything the attacks called ``names`` need, together."""
    return frozenset(need for name in names for need in REGISTRY[name].needs)
